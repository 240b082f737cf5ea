"""circuit_breaker, budget, rate_limits, default_policy and operation_policies."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.config.helpers import load, problems, write


def _one(tmp_path: Path, text: str) -> tuple[Path, list[str]]:
    path = write(tmp_path, text)
    return path, problems(path)


def test_an_unknown_top_level_section_is_named(tmp_path: Path) -> None:
    path, found = _one(tmp_path, "retyr: {}\n")
    assert found == [
        f"{path}:1: retyr: unknown key (did you mean 'retry'?); known: retry, frameworks, "
        "observe, store"
    ]


def test_an_unknown_retry_key_is_named(tmp_path: Path) -> None:
    path, found = _one(tmp_path, "retry:\n  budgets: {}\n")
    assert found[0].startswith(f"{path}:2: retry.budgets: unknown key (did you mean 'budget'?)")


def test_a_section_that_is_not_a_mapping_is_named(tmp_path: Path) -> None:
    path, found = _one(tmp_path, "retry:\n  budget: 0.1\n")
    assert found == [f"{path}:2: retry.budget: must be a mapping of settings, got 0.1"]


def test_an_unknown_policy_as_default_is_named(tmp_path: Path) -> None:
    path, found = _one(tmp_path, "retry:\n  default_policy: agressive\n")
    assert found == [
        f"{path}:2: retry.default_policy: unknown policy 'agressive' (did you mean "
        "'aggressive'?); known: agent_dispatch, aggressive, error_contract, no_retry, standard"
    ]


def test_a_default_policy_that_is_not_text_is_named(tmp_path: Path) -> None:
    path, found = _one(tmp_path, "retry:\n  default_policy: [standard]\n")
    assert found == [f"{path}:2: retry.default_policy: must be a policy name, got a list"]


def test_a_default_policy_defined_in_the_file_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, "retry: {default_policy: mine, policies: {mine: {}}}")
    assert load(path).registry.default.name == "mine"


def test_an_unknown_policy_in_operation_policies_is_named(tmp_path: Path) -> None:
    path, found = _one(tmp_path, "retry:\n  operation_policies:\n    llm: ghost\n")
    assert found[0].startswith(
        f"{path}:3: retry.operation_policies.llm: unknown policy 'ghost'; known: "
    )


def test_an_unknown_operation_type_is_named(tmp_path: Path) -> None:
    path, found = _one(tmp_path, "retry:\n  operation_policies:\n    agnet: standard\n")
    assert found == [
        f"{path}:3: retry.operation_policies.agnet: unknown operation type (did you mean "
        "'agent'?); one of llm, agent, network, file, permission"
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("failure_threshold: 0", "failure_threshold: must be >= 1, got 0"),
        ("failure_rate_threshold: 0", "failure_rate_threshold: must be > 0, got 0"),
        ("failure_rate_threshold: 50", "failure_rate_threshold: must be <= 1, got 50"),
        ("window_calls: 2.5", "window_calls: must be a whole number, got 2.5"),
        ("window_s: 0", "window_s: must be > 0, got 0"),
        ("open_duration_s: -1", "open_duration_s: must be >= 0, got -1"),
        ("half_open_max_probes: 0", "half_open_max_probes: must be >= 1, got 0"),
        (
            "counted_kinds: [netwrok]",
            "counted_kinds[0]: 'netwrok' is not a failure kind (did you mean 'network'?)",
        ),
    ],
)
def test_a_bad_circuit_breaker_setting_is_named(tmp_path: Path, line: str, expected: str) -> None:
    path, found = _one(tmp_path, f"retry:\n  circuit_breaker:\n    {line}\n")
    assert found == [f"{path}:3: retry.circuit_breaker.{expected}"]


def test_cancelled_never_counts_for_the_circuit_breaker(tmp_path: Path) -> None:
    path, found = _one(tmp_path, "retry:\n  circuit_breaker:\n    counted_kinds: [cancelled]\n")
    assert found[0].startswith(
        f"{path}:3: retry.circuit_breaker.counted_kinds[0]: 'cancelled' is not allowed here"
    )


def test_a_rule_of_the_breaker_may_be_switched_off_with_null(tmp_path: Path) -> None:
    path = write(tmp_path, "retry: {circuit_breaker: {failure_threshold: null}}")
    assert dict(load(path).circuit_breaker) == {"failure_threshold": None}


def test_an_unknown_circuit_breaker_key_is_named(tmp_path: Path) -> None:
    path, found = _one(tmp_path, "retry:\n  circuit_breaker:\n    failure_treshold: 3\n")
    assert found[0].startswith(
        f"{path}:3: retry.circuit_breaker.failure_treshold: unknown key (did you mean "
        "'failure_threshold'?); known: enabled, failure_threshold,"
    )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ratio: 10", "ratio: must be <= 1, got 10"),
        ("ratio: -0.1", "ratio: must be >= 0, got -0.1"),
        ("min_retries_per_s: fast", "min_retries_per_s: must be a number, got 'fast'"),
        ("window_s: 0", "window_s: must be > 0, got 0"),
    ],
)
def test_a_bad_budget_setting_is_named(tmp_path: Path, line: str, expected: str) -> None:
    path, found = _one(tmp_path, f"retry:\n  budget:\n    {line}\n")
    assert found == [f"{path}:3: retry.budget.{expected}"]


def test_a_bad_rate_limit_is_named(tmp_path: Path) -> None:
    path, found = _one(
        tmp_path, "retry:\n  rate_limits:\n    openai:\n      requests_per_minute: 0\n"
    )
    assert found == [f"{path}:4: retry.rate_limits.openai.requests_per_minute: must be > 0, got 0"]


def test_an_empty_rate_limit_is_named(tmp_path: Path) -> None:
    path, found = _one(tmp_path, "retry:\n  rate_limits:\n    openai: {}\n")
    assert found == [
        f"{path}:3: retry.rate_limits.openai: give requests_per_minute or tokens_per_minute, "
        "or both"
    ]


def test_a_rate_limit_key_that_is_no_provider_is_named(tmp_path: Path) -> None:
    path, found = _one(tmp_path, "retry:\n  rate_limits:\n    'open ai': {tokens_per_minute: 1}\n")
    assert found == [
        f'{path}:3: retry.rate_limits."open ai": must be a provider or provider/model, '
        "e.g. openai/gpt-4o"
    ]


def test_a_rate_limit_key_may_name_a_model_with_dots_and_slashes(tmp_path: Path) -> None:
    path = write(
        tmp_path, "retry: {rate_limits: {openrouter/google/gemini-2.5-pro: {tokens_per_minute: 9}}}"
    )
    assert list(load(path).rate_limits) == ["openrouter/google/gemini-2.5-pro"]
