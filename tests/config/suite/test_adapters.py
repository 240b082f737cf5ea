"""Adapters in a suite file: registry names, their own settings, secrets by name only."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.config.suite_helpers import SCENARIO, load, one_task, problems

from backstay import ConfigError
from backstay.config import AdapterOptions

KEY = "sk-ant-api03-SuiteCanarySuiteCanary0123456789"
KNOWN = (
    "agent-runtime, aider, anthropic-api, autogen, claude-code, codex, gemini-api, "
    "gemini-cli, langgraph, llamaindex, mock, openai-api … (14 in all)"
)


def _suite(adapters: str, *, defaults: str = "{adapter: mock, model: m}") -> str:
    return f"""\
suite: s
defaults: {defaults}
adapters:
{adapters}
tasks:
  - {{id: t, prompt: hi}}
"""


def test_an_unknown_adapter_gets_a_suggestion_and_the_known_names(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task("prompt: hi\nadapter: mokc"))
    assert found == [
        f"8: tasks[0].adapter: unknown adapter 'mokc' (did you mean 'mock'?); known: {KNOWN}"
    ]


def test_an_unknown_adapter_under_adapters_is_a_problem(tmp_path: Path) -> None:
    text = _suite(f"  mock: {{scenario: {SCENARIO}}}\n  claude-cod: {{}}")
    assert problems(tmp_path, text) == [
        "5: adapters.claude-cod: unknown adapter 'claude-cod' (did you mean 'claude-code'?); "
        f"known: {KNOWN}"
    ]


def test_an_api_adapter_is_told_which_variable_holds_its_key(tmp_path: Path) -> None:
    text = _suite(
        "  anthropic-api: {base_url: 'http://127.0.0.1:8787', api_key_env: MY_KEY}",
        defaults="{adapter: anthropic-api, model: claude-sonnet-4-5}",
    )
    suite = load(tmp_path, text)
    assert suite.tasks[0].adapter == "anthropic-api"
    assert suite.adapters["anthropic-api"] == AdapterOptions(
        adapter="anthropic-api",
        config={"base_url": "http://127.0.0.1:8787", "api_key_env": "MY_KEY"},
        api_key_env="MY_KEY",
    )


def test_an_available_adapter_checks_its_own_settings(tmp_path: Path) -> None:
    found = problems(tmp_path, _suite("  mock: {scenario: {attempts: []}}"))
    assert found == ["4: adapters.mock.scenario.attempts: must be a non-empty list of step lists"]


def test_an_adapter_setting_problem_names_its_own_line(tmp_path: Path) -> None:
    text = _suite(
        "  mock:\n    scenario:\n      attempts:\n        - - print: hi\n          - sleep: -1"
    )
    assert problems(tmp_path, text) == [
        "8: adapters.mock.scenario.attempts[0][1].sleep: must be a finite number >= 0, got -1"
    ]


def test_an_unknown_adapter_setting_is_a_problem(tmp_path: Path) -> None:
    text = _suite(f"  mock: {{scenario: {SCENARIO}, colour: blue}}")
    assert problems(tmp_path, text) == [
        "4: adapters.mock.colour: unknown setting for adapter 'mock' "
        "(known: scenario, scenarios, state_dir)"
    ]


def test_a_used_adapter_without_settings_says_where_they_go(tmp_path: Path) -> None:
    text = "suite: s\ntasks:\n  - {id: t, prompt: hi, adapter: mock, model: m}\n"
    assert problems(tmp_path, text) == [
        "3: tasks[0].adapter: adapter 'mock' needs settings under adapters.mock: "
        "scenario: is required"
    ]


def test_an_inline_api_key_is_refused_without_showing_it(tmp_path: Path) -> None:
    text = _suite(f"  mock: {{scenario: {SCENARIO}}}\n  anthropic-api: {{api_key: {KEY}}}")
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    assert "adapters.anthropic-api.api_key: an API key is never given inline" in str(info.value)
    assert "use api_key_env" in str(info.value)
    assert KEY not in str(info.value)


@pytest.mark.parametrize(
    "key", ["token", "access_token", "password", "client_secret", "Auth_Token"]
)
def test_other_inline_secrets_are_refused_without_showing_them(tmp_path: Path, key: str) -> None:
    text = _suite(f"  mock: {{scenario: {SCENARIO}, {key}: plain-secret-value-1234}}")
    (found,) = problems(tmp_path, text)
    assert found.startswith(f"4: adapters.mock.{key}: secrets are never given inline")
    assert "plain-secret-value-1234" not in found


def test_a_key_pasted_into_api_key_env_is_not_shown(tmp_path: Path) -> None:
    text = _suite(f"  mock: {{scenario: {SCENARIO}, api_key_env: {KEY}}}")
    assert problems(tmp_path, text) == [
        "4: adapters.mock.api_key_env: must be the name of an environment variable "
        "(letters, digits and '_')"
    ]


def test_an_unshaped_secret_in_a_setting_message_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUITE_TEST_TOKEN", "unshaped-canary-value-42")
    text = _suite("  mock: {scenario: unshaped-canary-value-42}")
    (found,) = problems(tmp_path, text)
    assert "unshaped-canary-value-42" not in found
    assert "[REDACTED]" in found


def test_pass_env_and_api_key_env_are_kept_as_names(tmp_path: Path) -> None:
    text = _suite(f"  mock: {{scenario: {SCENARIO}, api_key_env: MY_KEY, pass_env: [HOME, LANG]}}")
    options = load(tmp_path, text).adapters["mock"]
    assert (options.api_key_env, options.pass_env) == ("MY_KEY", ("HOME", "LANG"))
    assert set(options.config) == {"scenario"}


def test_pass_env_must_name_variables(tmp_path: Path) -> None:
    text = _suite(f"  mock: {{scenario: {SCENARIO}, pass_env: [HOME, 'A B']}}")
    assert problems(tmp_path, text) == [
        "4: adapters.mock.pass_env[1]: must be the name of an environment variable "
        "(letters, digits and '_')"
    ]


def test_options_not_given_are_empty() -> None:
    options = AdapterOptions(adapter="mock")
    assert (dict(options.config), options.api_key_env, options.pass_env) == ({}, None, ())


def test_child_env_passes_the_key_under_its_own_name() -> None:
    options = AdapterOptions(adapter="x", api_key_env="MY_KEY")
    assert options.child_env({"MY_KEY": KEY, "OTHER": "o"}) == {"MY_KEY": KEY}


def test_child_env_passes_the_named_variables_that_are_set() -> None:
    options = AdapterOptions(adapter="x", pass_env=("HOME", "UNSET_ONE"))
    assert options.child_env({"HOME": "/h", "PATH": "/bin"}) == {"HOME": "/h"}


def test_child_env_without_the_key_names_the_variable() -> None:
    options = AdapterOptions(adapter="x", api_key_env="MY_KEY")
    with pytest.raises(ConfigError) as info:
        options.child_env({})
    assert str(info.value) == (
        "api_key_env: the environment variable MY_KEY is not set "
        "(adapter 'x' reads its API key from it)"
    )


def test_adapter_options_refuse_a_value_for_a_name() -> None:
    with pytest.raises(ConfigError) as info:
        AdapterOptions(adapter="x", api_key_env=KEY)
    assert KEY not in str(info.value)
