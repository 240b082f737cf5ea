"""load_config: which file is read, and what an absent, unreadable or odd file gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.config.helpers import load, problems, write

from backstay.config import load_config
from backstay.policy import BUILTIN_POLICIES, STANDARD


def test_no_file_gives_the_built_in_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = load(None)
    assert config.file is None
    assert config.registry.default is STANDARD
    assert config.circuit_breaker == {}


def test_backstay_yaml_in_the_working_directory_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "retry: {default_policy: no_retry}")
    monkeypatch.chdir(tmp_path)
    assert load(None).default_policy == "no_retry"


def test_the_environment_variable_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "retry: {default_policy: aggressive}", name="elsewhere.yaml")
    write(tmp_path, "retry: {default_policy: no_retry}")
    monkeypatch.chdir(tmp_path)
    config = load(None, environ={"BACKSTAY_CONFIG": str(tmp_path / "elsewhere.yaml")})
    assert config.default_policy == "aggressive"


def test_an_explicit_path_wins_over_the_environment_variable(tmp_path: Path) -> None:
    given = write(tmp_path, "retry: {default_policy: aggressive}", name="given.yaml")
    named = write(tmp_path, "retry: {default_policy: no_retry}", name="named.yaml")
    config = load(given, environ={"BACKSTAY_CONFIG": str(named)})
    assert config.default_policy == "aggressive"


def test_load_config_reads_the_process_environment_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BACKSTAY__RETRY__DEFAULT_POLICY", "no_retry")
    assert load_config().default_policy == "no_retry"


def test_a_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    assert problems(tmp_path / "nope.yaml") == [f"{tmp_path / 'nope.yaml'}: no such file"]


def test_a_missing_file_named_by_the_environment_says_who_named_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    assert problems(None, environ={"BACKSTAY_CONFIG": str(missing)}) == [
        f"{missing}: no such file (named by BACKSTAY_CONFIG)"
    ]


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    assert problems(tmp_path) == [f"{tmp_path}: is a directory, not a file"]


def test_a_file_that_is_not_utf8_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "backstay.yaml"
    path.write_bytes(b"retry: \xff\n")
    assert problems(path) == [f"{path}: is not UTF-8 text (byte 7)"]


def test_an_empty_file_gives_the_defaults(tmp_path: Path) -> None:
    assert load(write(tmp_path, "")).default_policy == "standard"


def test_an_empty_retry_section_gives_the_defaults(tmp_path: Path) -> None:
    assert load(write(tmp_path, "retry:\n")).default_policy == "standard"


def test_a_file_that_is_not_a_mapping_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "- retry\n")
    assert problems(path) == [f"{path}: must be a mapping with a 'retry' section, got list"]


def test_the_loaded_config_is_frozen(tmp_path: Path) -> None:
    config = load(write(tmp_path, "retry: {budget: {ratio: 0.1}}"))
    with pytest.raises(AttributeError):
        config.budget = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.budget["ratio"] = 0.5  # type: ignore[index]


def test_sections_keep_their_validated_settings(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        retry:
          circuit_breaker: {failure_threshold: 5, counted_kinds: [network, timeout]}
          budget: {ratio: 0.1, min_retries_per_s: 2, window_s: 10}
          rate_limits:
            openai: {requests_per_minute: 500}
            anthropic/claude-sonnet-4-5: {tokens_per_minute: 40000}
        """,
    )
    config = load(path)
    assert dict(config.circuit_breaker) == {
        "failure_threshold": 5,
        "counted_kinds": ("network", "timeout"),
    }
    assert dict(config.budget) == {"ratio": 0.1, "min_retries_per_s": 2, "window_s": 10}
    assert dict(config.rate_limits["anthropic/claude-sonnet-4-5"]) == {"tokens_per_minute": 40000}


def test_operation_policies_reach_the_registry(tmp_path: Path) -> None:
    path = write(tmp_path, "retry: {operation_policies: {agent: agent_dispatch}}")
    assert load(path).registry.for_operation("agent").name == "agent_dispatch"


def test_a_thousand_policies_load(tmp_path: Path) -> None:
    lines = ["retry:", "  default_policy: p999", "  policies:"]
    lines += [f"    p{i}: {{max_attempts: {i % 5 + 1}}}" for i in range(1000)]
    config = load(write(tmp_path, "\n".join(lines) + "\n"))
    assert len(config.registry) == 1000 + len(BUILTIN_POLICIES)
    assert config.registry.default.max_attempts == 5


def test_a_chain_of_a_thousand_extends_loads(tmp_path: Path) -> None:
    lines = ["retry:", "  policies:", "    p0: {max_attempts: 4}"]
    lines += [f"    p{i}: {{extends: p{i - 1}}}" for i in range(1, 1000)]
    config = load(write(tmp_path, "\n".join(lines) + "\n"))
    assert config.policy("p999").max_attempts == 4
    assert str(config.source_of("retry.policies.p999.max_attempts")).startswith(
        f"{tmp_path / 'backstay.yaml'}:3"
    )


def test_lenient_loading_warns_and_falls_back_to_the_default(tmp_path: Path) -> None:
    path = write(tmp_path, "retry: {policies: {standard: {max_attempts: 0}}}")
    with pytest.warns(UserWarning, match=r"retry.policies.standard.max_attempts: must be >= 1"):
        config = load_config(path, environ={}, strict=False)
    assert config.policy("standard") == STANDARD
    assert config.problems == (
        f"{path}:1: retry.policies.standard.max_attempts: must be >= 1, got 0",
    )


def test_lenient_loading_keeps_what_is_valid(tmp_path: Path) -> None:
    path = write(tmp_path, "retry: {budget: {ratio: 2, window_s: 10}}")
    with pytest.warns(UserWarning, match=r"retry.budget.ratio: must be <= 1, got 2"):
        config = load_config(path, environ={}, strict=False)
    assert dict(config.budget) == {"window_s": 10}


def test_lenient_loading_of_a_broken_file_gives_the_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, "retry: [\n")
    with pytest.warns(UserWarning, match="invalid YAML"):
        config = load_config(path, environ={}, strict=False)
    assert config.registry.default is STANDARD


def test_lenient_loading_falls_back_to_standard_for_a_broken_default(tmp_path: Path) -> None:
    path = write(tmp_path, "retry: {default_policy: ghost}")
    with pytest.warns(UserWarning, match="unknown policy 'ghost'"):
        config = load_config(path, environ={}, strict=False)
    assert config.default_policy == "standard"


def test_a_valid_file_loads_without_warning(tmp_path: Path) -> None:
    # pytest turns warnings into errors here: a stray warning fails this test.
    load_config(write(tmp_path, "retry: {default_policy: standard}"), environ={}, strict=False)
