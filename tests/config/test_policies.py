"""retry.policies: each kind of mistake, and how extends and built-in names derive."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.config.helpers import load, problems, write

from backstay.policy import AGGRESSIVE, ERROR_CONTRACT, STANDARD, Backoff
from backstay.policy.retry import KindOverride
from backstay.taxonomy import ErrorCategory, FailureKind


def _policy(tmp_path: Path, body: str) -> tuple[Path, list[str]]:
    path = write(tmp_path, f"retry:\n  policies:\n    p:\n{body}")
    return path, problems(path)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("      max_attempts: three\n", "max_attempts: must be a whole number, got 'three'"),
        ("      max_attempts: 2.5\n", "max_attempts: must be a whole number, got 2.5"),
        ("      max_attempts: true\n", "max_attempts: must be a whole number, got a boolean"),
        ("      initial_delay_s: [1]\n", "initial_delay_s: must be a number, got a list"),
        ("      initial_delay_s: .nan\n", "initial_delay_s: must be finite, got nan"),
        ("      max_attempts: null\n", "max_attempts: must be set, got null (a whole number)"),
        ("      backoff: 3\n", "backoff: must be one of constant, linear, exponential; got 3"),
        (
            "      retry_on: rate_limit\n",
            "retry_on: must be a list, got 'rate_limit'; write [rate_limit]",
        ),
    ],
)
def test_a_value_of_the_wrong_type_is_named(tmp_path: Path, body: str, expected: str) -> None:
    path, found = _policy(tmp_path, body)
    assert found == [f"{path}:4: retry.policies.p.{expected}"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("      max_attempts: 0\n", "max_attempts: must be >= 1, got 0"),
        ("      initial_delay_s: -1\n", "initial_delay_s: must be >= 0, got -1"),
        ("      multiplier: 0.5\n", "multiplier: must be >= 1, got 0.5"),
        ("      jitter: 1.5\n", "jitter: must be <= 1, got 1.5"),
        ("      max_retry_after_s: -0.1\n", "max_retry_after_s: must be >= 0, got -0.1"),
        ("      deadline_s: -5\n", "deadline_s: must be >= 0, got -5"),
    ],
)
def test_a_number_out_of_range_is_named(tmp_path: Path, body: str, expected: str) -> None:
    path, found = _policy(tmp_path, body)
    assert found == [f"{path}:4: retry.policies.p.{expected}"]


def test_a_bad_enum_value_suggests_the_near_one(tmp_path: Path) -> None:
    path, found = _policy(tmp_path, "      jitter_mode: ful\n")
    assert found == [
        f"{path}:4: retry.policies.p.jitter_mode: must be one of none, proportional, full, "
        "decorrelated, sha256; got 'ful' (did you mean 'full'?)"
    ]


def test_an_unknown_setting_suggests_the_near_one(tmp_path: Path) -> None:
    path, found = _policy(tmp_path, "      max_atempts: 3\n")
    assert found[0].startswith(
        f"{path}:4: retry.policies.p.max_atempts: unknown key (did you mean 'max_attempts'?); "
        "known: extends, max_attempts, backoff,"
    )


def test_a_name_setting_is_refused_with_the_reason(tmp_path: Path) -> None:
    path, found = _policy(tmp_path, "      name: other\n")
    assert found == [
        f"{path}:4: retry.policies.p.name: a policy is named by its key under policies; remove this"
    ]


def test_an_unknown_failure_kind_in_a_list_names_the_item_and_its_line(tmp_path: Path) -> None:
    path, found = _policy(tmp_path, "      retry_on:\n        - timeout\n        - ratelimit\n")
    assert found == [
        f"{path}:6: retry.policies.p.retry_on[1]: 'ratelimit' is not a failure kind or an "
        "ERR_* code (did you mean 'rate_limit'?)"
    ]


def test_an_unknown_per_kind_kind_is_named(tmp_path: Path) -> None:
    path, found = _policy(tmp_path, "      per_kind:\n        time_out: {max_attempts: 2}\n")
    assert found[0].startswith(
        f"{path}:5: retry.policies.p.per_kind.time_out: is not a failure kind "
        "(did you mean 'timeout'?); one of network,"
    )


def test_a_bad_per_kind_setting_is_named(tmp_path: Path) -> None:
    path, found = _policy(tmp_path, "      per_kind:\n        timeout:\n          multiplier: 0\n")
    assert found == [f"{path}:6: retry.policies.p.per_kind.timeout.multiplier: must be >= 1, got 0"]


def test_per_category_is_read_from_the_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "retry:\n  policies:\n    p:\n      per_category:\n        TRANSIENT: {max_attempts: 2}\n",
    )
    policy = load(path).policy("p")
    assert policy.per_category == {ErrorCategory.TRANSIENT: KindOverride(max_attempts=2)}


def test_an_unknown_per_category_name_is_named(tmp_path: Path) -> None:
    path, found = _policy(tmp_path, "      per_category:\n        TRANSENT: {max_attempts: 2}\n")
    assert found[0].startswith(
        f"{path}:5: retry.policies.p.per_category.TRANSENT: is not an error category "
        "(did you mean 'TRANSIENT'?); one of TRANSIENT,"
    )


def test_extending_error_contract_keeps_its_category_limits(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  policies:\n    p:\n      extends: error_contract\n")
    assert load(path).policy("p").per_category == ERROR_CONTRACT.per_category


def test_a_rule_between_settings_is_named_by_the_policy_itself(tmp_path: Path) -> None:
    path, found = _policy(tmp_path, "      initial_delay_s: 10\n      max_delay_s: 1\n")
    assert found == [
        f"{path}:5: retry.policies.p.max_delay_s: must be >= initial_delay_s (10), got 1"
    ]


def test_a_policy_that_is_not_a_mapping_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  policies:\n    p: 3\n")
    assert problems(path) == [
        f"{path}:3: retry.policies.p: must be a mapping of policy settings, got 3"
    ]


def test_a_policy_name_with_a_dot_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  policies:\n    a.b: {}\n")
    assert problems(path) == [
        f'{path}:3: retry.policies."a.b": a policy name starts with a letter and holds '
        "letters, digits, '_' and '-'"
    ]


def test_an_unknown_extends_is_named_with_a_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  policies:\n    p: {extends: standrd}\n")
    assert problems(path) == [
        f"{path}:3: retry.policies.p.extends: unknown policy 'standrd' (did you mean "
        "'standard'?); known: agent_dispatch, aggressive, error_contract, no_retry, p, standard"
    ]


def test_an_extends_cycle_is_named_once_with_its_members(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "retry:\n  policies:\n    a: {extends: b}\n    b: {extends: c}\n    c: {extends: a}\n",
    )
    assert problems(path) == [f"{path}:3: retry.policies.a.extends: extends cycle: a → b → c → a"]


def test_a_policy_that_extends_itself_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  policies:\n    a: {extends: a}\n")
    assert problems(path) == [f"{path}:3: retry.policies.a.extends: extends itself"]


def test_a_policy_extending_a_broken_one_adds_no_second_problem(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  policies:\n    a: {extends: nope}\n    b: {extends: a}\n")
    (problem,) = problems(path)
    assert "retry.policies.a.extends: unknown policy 'nope'" in problem


def test_a_policy_named_like_a_built_in_changes_only_what_it_sets(tmp_path: Path) -> None:
    # Its settings, without the built-in's per-kind limits: what the file prints is what it
    # means (the retry policy framework's aggressive/standard, docs/conformance.md).
    config = load(write(tmp_path, "retry: {policies: {standard: {max_attempts: 6}}}"))
    assert config.policy("standard") == STANDARD.derive(max_attempts=6, per_kind={})


def test_a_policy_extending_its_built_in_namesake_keeps_its_per_kind_limits(
    tmp_path: Path,
) -> None:
    text = "retry: {policies: {standard: {extends: standard, max_attempts: 6}}}"
    assert load(write(tmp_path, text)).policy("standard") == STANDARD.derive(max_attempts=6)


def test_extends_starts_from_the_parent(tmp_path: Path) -> None:
    path = write(tmp_path, "retry: {policies: {p: {extends: aggressive, jitter: 0}}}")
    assert load(path).policy("p") == AGGRESSIVE.derive(name="p", jitter=0)


def test_extends_reaches_a_policy_of_the_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        retry:
          policies:
            child: {extends: parent, max_attempts: 2}
            parent: {backoff: linear, max_attempts: 5}
        """,
    )
    child = load(path).policy("child")
    assert (child.backoff, child.max_attempts) == (Backoff.LINEAR, 2)


def test_extends_a_built_in_name_that_the_file_redefines_uses_the_file_version(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        "retry:\n  policies:\n    standard: {max_attempts: 7}\n    p: {extends: standard}\n",
    )
    assert load(path).policy("p").max_attempts == 7


def test_per_kind_merges_kind_by_kind_and_key_by_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "retry:\n  policies:\n    p:\n      extends: standard\n"
        "      per_kind: {rate_limit: {max_attempts: 9}}\n",
    )
    per_kind = load(path).policy("p").per_kind
    assert per_kind[FailureKind.RATE_LIMIT].max_attempts == 9
    assert per_kind[FailureKind.RATE_LIMIT].max_delay_s == 30.0
    assert per_kind[FailureKind.TIMEOUT] == STANDARD.per_kind[FailureKind.TIMEOUT]


def test_a_new_policy_starts_from_the_defaults(tmp_path: Path) -> None:
    policy = load(write(tmp_path, "retry: {policies: {p: {seed: 3}}}")).policy("p")
    assert policy.max_attempts == 3
    assert policy.per_kind == {}
