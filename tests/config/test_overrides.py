"""BACKSTAY__* variables and --set items on top of the file: file < env < --set."""

from __future__ import annotations

from pathlib import Path

from tests.config.helpers import load, problems, write

ENV = "BACKSTAY__RETRY__POLICIES__STANDARD__MAX_ATTEMPTS"
SET = "retry.policies.standard.max_attempts"


def _file(tmp_path: Path) -> Path:
    return write(tmp_path, "retry:\n  policies:\n    standard:\n      max_attempts: 4\n")


def test_a_variable_overrides_the_file(tmp_path: Path) -> None:
    config = load(_file(tmp_path), environ={ENV: "5"})
    assert config.policy("standard").max_attempts == 5


def test_set_overrides_a_variable(tmp_path: Path) -> None:
    config = load(_file(tmp_path), environ={ENV: "5"}, overrides=[f"{SET}=6"])
    assert config.policy("standard").max_attempts == 6


def test_the_last_of_several_sets_wins(tmp_path: Path) -> None:
    config = load(_file(tmp_path), overrides=[f"{SET}=6", f"{SET}=7"])
    assert config.policy("standard").max_attempts == 7


def test_an_override_works_without_a_file() -> None:
    assert load(None, environ={ENV: "5"}).policy("standard").max_attempts == 5


def test_an_override_can_create_a_policy() -> None:
    config = load(None, overrides=["retry.policies.mine.extends=no_retry"])
    assert config.policy("mine").max_attempts == 1


def test_variable_names_are_read_case_insensitively() -> None:
    config = load(None, environ={"BACKSTAY__Retry__Default_Policy": "no_retry"})
    assert config.default_policy == "no_retry"


def test_values_are_read_as_yaml() -> None:
    config = load(
        None,
        overrides=[
            "retry.policies.standard.retry_on=[timeout, network]",
            "retry.policies.standard.deadline_s=",
            "retry.circuit_breaker.failure_rate_threshold=0.25",
        ],
    )
    assert config.policy("standard").retry_on == {"timeout", "network"}
    assert config.policy("standard").deadline_s is None
    assert config.circuit_breaker["failure_rate_threshold"] == 0.25


def test_a_quoted_key_part_may_hold_dots() -> None:
    config = load(None, overrides=['retry.rate_limits."openai/gpt-4.1".requests_per_minute=9'])
    assert config.rate_limits["openai/gpt-4.1"]["requests_per_minute"] == 9


def test_variables_without_the_double_underscore_prefix_are_ignored() -> None:
    config = load(None, environ={"BACKSTAY_RETRY": "x", "BACKSTAY_CONFIG": ""})
    assert config.default_policy == "standard"


def test_a_bad_value_from_a_variable_names_the_variable() -> None:
    assert problems(None, environ={ENV: "0"}) == [f"{ENV}: {SET}: must be >= 1, got 0"]


def test_a_bad_value_from_set_names_the_flag() -> None:
    assert problems(None, overrides=[f"{SET}=zero"]) == [
        f"--set: {SET}: must be a whole number, got 'zero'"
    ]


def test_an_unknown_key_from_a_variable_is_named() -> None:
    found = problems(None, environ={"BACKSTAY__RETRY__BUDGET__RATE": "1"})
    assert found == [
        "BACKSTAY__RETRY__BUDGET__RATE: retry.budget.rate: unknown key (did you mean "
        "'ratio'?); known: ratio, min_retries_per_s, window_s, buckets"
    ]


def test_a_set_without_a_value_is_an_error() -> None:
    assert problems(None, overrides=["retry.budget.ratio"]) == [
        "--set: expected KEY=VALUE, got 'retry.budget.ratio'"
    ]


def test_a_malformed_set_key_is_an_error() -> None:
    assert problems(None, overrides=["retry..budget=1"]) == [
        "--set: malformed key path 'retry..budget'"
    ]


def test_a_malformed_variable_name_is_an_error() -> None:
    assert problems(None, environ={"BACKSTAY__RETRY____BUDGET": "1"}) == [
        "BACKSTAY__RETRY____BUDGET: malformed name: parts are separated by one '__'"
    ]


def test_a_value_that_is_not_yaml_is_an_error() -> None:
    (found,) = problems(None, overrides=["retry.budget.ratio=[1"])
    assert found.startswith("--set: cannot read the value '[1': ")


def test_an_override_through_a_value_that_is_not_a_mapping_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  default_policy: standard\n")
    assert problems(path, overrides=["retry.default_policy.x=1"]) == [
        "--set: retry.default_policy: is 'standard', not a mapping, so "
        "retry.default_policy.x cannot be set"
    ]
