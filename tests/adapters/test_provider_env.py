"""``backstay.adapters.provider_env``: what each adapter declares, the environment a run
inherits from it, and the harness entry point (``BaseAdapter.run``) taking the standard
variables from the caller's environment, against the fake provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest
from tests.adapters.api_server import ApiServer
from tests.adapters.api_support import Router, wire_for
from tests.adapters.support import CANARY_KEY

from backstay.adapters import BaseAdapter, ProviderEnv
from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.api.openai import OpenAIApiAdapter
from backstay.adapters.cli.codex.settings import CodexSettings, config_toml
from backstay.adapters.cli.opencode.settings import OpencodeSettings, config_content
from backstay.adapters.provider_env import (
    ANTHROPIC_ENV,
    BUILTIN_PROVIDER_ENV,
    NO_PROVIDER_ENV,
    agent_env,
    declared_env,
)
from backstay.adapters.registry import BUILTIN_ADAPTERS, adapter_class
from backstay.errors import ConfigError
from backstay.fakeprovider import FakeProvider

UNREACHABLE: Final = "http://127.0.0.1:9"  # the discard port: nothing listens there


def test_only_the_declared_variables_that_are_set_are_inherited() -> None:
    environ = {
        "ANTHROPIC_API_KEY": "k",
        "ANTHROPIC_AUTH_TOKEN": "",
        "ANTHROPIC_BASE_URL": "http://x",
        "AWS_SECRET_ACCESS_KEY": "leak",
        "HOME": "/root",
    }
    assert ANTHROPIC_ENV.inherited(environ) == {
        "ANTHROPIC_API_KEY": "k",
        "ANTHROPIC_BASE_URL": "http://x",
    }


def test_an_explicit_value_wins_over_an_inherited_one() -> None:
    env = agent_env(
        AnthropicApiAdapter,
        {"ANTHROPIC_BASE_URL": "http://mine", "EXTRA": "1"},
        environ={"ANTHROPIC_BASE_URL": "http://shell", "ANTHROPIC_API_KEY": "k"},
    )
    assert env == {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://mine", "EXTRA": "1"}


def test_without_inheritance_the_environment_is_the_explicit_one() -> None:
    env = agent_env(
        AnthropicApiAdapter, {"EXTRA": "1"}, environ={"ANTHROPIC_API_KEY": "k"}, inherit=False
    )
    assert env == {"EXTRA": "1"}


def test_an_adapter_that_declares_nothing_inherits_nothing() -> None:
    assert declared_env(object()) is NO_PROVIDER_ENV
    assert agent_env(object(), {}, environ={"ANTHROPIC_API_KEY": "k"}) == {}


def test_a_declared_name_must_be_a_variable_name() -> None:
    with pytest.raises(ConfigError, match="credentials"):
        ProviderEnv(credentials=("NOT A NAME",))


# The mock agent talks to no provider; agent-runtime runs the user's own factory in this
# process, whose client picks its provider (and reads that provider's variables) itself.
_NO_PROVIDER: Final = ("agent-runtime", "mock")


@pytest.mark.parametrize("name", sorted(BUILTIN_ADAPTERS))
def test_every_builtin_adapter_but_mock_declares_a_key_and_an_endpoint(name: str) -> None:
    declared = declared_env(adapter_class(name))
    if name in _NO_PROVIDER:
        assert declared == NO_PROVIDER_ENV
    else:
        assert declared.credentials
        assert declared.endpoint


def test_the_description_says_what_each_variable_holds() -> None:
    assert ANTHROPIC_ENV.describe() == (
        "ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN (key); ANTHROPIC_BASE_URL (URL)"
    )
    assert NO_PROVIDER_ENV.describe() == "none"


# -- codex and opencode: OPENAI_BASE_URL written into their own configuration ------------


def test_codex_writes_openai_base_url_into_its_config_toml() -> None:
    settings = CodexSettings.from_config({}).with_endpoint({"OPENAI_BASE_URL": "http://f/v1/"})
    assert 'base_url = "http://f/v1"' in config_toml(settings, None)


def test_codex_base_url_setting_wins_over_openai_base_url() -> None:
    settings = CodexSettings.from_config({"base_url": "http://set/v1"})
    settings = settings.with_endpoint({"OPENAI_BASE_URL": "http://env/v1"})
    assert 'base_url = "http://set/v1"' in config_toml(settings, None)


def test_codex_without_either_uses_the_official_endpoint() -> None:
    settings = CodexSettings.from_config({}).with_endpoint({})
    assert 'base_url = "https://api.openai.com/v1"' in config_toml(settings, None)


def test_codex_sends_the_account_headers_from_codexs_own_variables() -> None:
    text = config_toml(CodexSettings.from_config({}), None)
    assert (
        'env_http_headers = { "OpenAI-Organization" = "OPENAI_ORGANIZATION", '
        '"OpenAI-Project" = "OPENAI_PROJECT" }' in text
    )


def test_a_malformed_openai_base_url_names_the_variable() -> None:
    with pytest.raises(ConfigError) as caught:
        CodexSettings.from_config({}).with_endpoint({"OPENAI_BASE_URL": "ftp://x"})
    assert caught.value.where == "env.OPENAI_BASE_URL"


def test_opencode_writes_openai_base_url_into_its_configuration() -> None:
    settings = OpencodeSettings.from_config({}).with_endpoint({"OPENAI_BASE_URL": "http://f/v1"})
    content = json.loads(config_content(settings, "gpt-5", None))
    assert content["provider"]["openai"]["options"]["baseURL"] == "http://f/v1"


# -- the harness entry point, against the fake provider ------------------------------------


def _run(adapter: BaseAdapter, tmp_path: Path, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    (tmp_path / "prompt.md").write_text("Say hello", encoding="utf-8")
    code = adapter.run(
        "claude-haiku-4-5", tmp_path / "prompt.md", tmp_path, tmp_path / "out", {}, 30, **kwargs
    )
    metrics: dict[str, Any] = json.loads((tmp_path / "out" / "metrics.json").read_text())
    return code, metrics


def test_run_takes_the_standard_variables_from_the_callers_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with FakeProvider() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        code, metrics = _run(AnthropicApiAdapter(), tmp_path)
        assert fake.stats().requests == 1
    assert (code, metrics["api_calls"]) == (0, 1)
    assert metrics["tokens_input"] > 0
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert CANARY_KEY not in path.read_text(encoding="utf-8"), path


def test_run_gives_an_explicit_env_value_precedence(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with FakeProvider() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", UNREACHABLE)
        code, _ = _run(AnthropicApiAdapter(), tmp_path, env={"ANTHROPIC_BASE_URL": fake.url})
        assert fake.stats().requests == 1
    assert code == 0


def test_run_with_inherit_env_false_gets_only_the_explicit_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with FakeProvider() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        code, metrics = _run(AnthropicApiAdapter(), tmp_path, inherit_env=False)
        assert fake.stats().requests == 0
    assert code == 1
    assert metrics["error"].startswith("ERR_AUTH_MISSING_CREDENTIALS")


# -- what the API adapters send for the variables they read --------------------------------


def test_anthropic_auth_token_is_sent_as_a_bearer_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server = ApiServer(Router(wire_for("anthropic-api")))
    with server:
        monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", CANARY_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", f"{server.url}/success")
        code, _ = _run(AnthropicApiAdapter(), tmp_path)
        (request,) = server.seen()
    assert code == 0
    assert request.headers["authorization"] == f"Bearer {CANARY_KEY}"
    assert "x-api-key" not in request.headers


def test_openai_org_and_project_are_sent_as_the_account_headers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server = ApiServer(Router(wire_for("openai-api")))
    with server:
        monkeypatch.setenv("OPENAI_API_KEY", CANARY_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/success/v1")
        monkeypatch.setenv("OPENAI_ORG_ID", "org-canary")
        monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_canary")
        code, _ = _run(OpenAIApiAdapter(), tmp_path)
        (request,) = server.seen()
    assert code == 0
    assert request.headers["openai-organization"] == "org-canary"
    assert request.headers["openai-project"] == "proj_canary"


@pytest.mark.parametrize("name", sorted(BUILTIN_ADAPTERS))
def test_the_table_of_builtin_variables_is_what_each_adapter_declares(name: str) -> None:
    assert BUILTIN_PROVIDER_ENV[name] == declared_env(adapter_class(name))


def test_the_table_names_every_builtin_adapter_and_nothing_else() -> None:
    assert set(BUILTIN_PROVIDER_ENV) == set(BUILTIN_ADAPTERS)
