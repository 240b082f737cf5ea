"""Aider's providers by the model's prefix (``backstay.adapters.cli.aider.providers``): the
variables an attempt's base URL and key reach Aider through, straight and through a
gateway (a recording stand-in here; test_aider_gateway.py runs the real one with the real
Aider). The command line and environment are built as for a run, with a stand-in
installation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.adapters.cli.aider.test_settings import stand_in

from backstay.adapters.cli.aider import AiderAdapter
from backstay.adapters.cli.aider.command import AiderFiles, command, environment
from backstay.adapters.cli.aider.providers import ANTHROPIC, GEMINI, OPENAI, provider_for
from backstay.adapters.contract import AgentRequest
from backstay.adapters.gateway_wiring import (
    GATEWAY_TIMEOUT_MARGIN_S,
    OpenedRun,
    open_run,
    through_gateway,
    use_gateway,
)
from backstay.agents import Located, locate

KEY = "sk-real-key-canary-0123456789"
TOKEN = "bsgw-run-test-token"
GATEWAY_URL = "http://127.0.0.1:4321"
DEADLINE_S = 900.0
# Every provider's key and base URL, as a user's environment might hold them all.
EVERYTHING = {
    "OPENAI_API_KEY": KEY,
    "OPENAI_BASE_URL": "http://openai.test/v1",
    "OPENAI_API_BASE": "http://openai.test/v1",
    "ANTHROPIC_API_KEY": KEY,
    "ANTHROPIC_AUTH_TOKEN": KEY,
    "ANTHROPIC_BASE_URL": "http://anthropic.test",
    "ANTHROPIC_API_BASE": "http://anthropic.test",
    "GEMINI_API_KEY": KEY,
    "GOOGLE_API_KEY": KEY,
    "GEMINI_API_BASE": "http://gemini.test/v1beta",
}


class _Gateway:
    url = GATEWAY_URL
    deadline_s = DEADLINE_S

    def __init__(self) -> None:
        self.opened: list[dict[str, Any]] = []

    def open_run(self, **run: Any) -> str:
        self.opened.append(run)
        return TOKEN

    def close_run(self, token: str) -> None:
        return None


@pytest.fixture
def located(tmp_path: Path) -> Located:
    return locate("aider", stand_in(tmp_path / "install"))


def _request(tmp_path: Path, model: str, env: dict[str, str], **config: Any) -> AgentRequest:
    return AgentRequest(
        model=model,
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        timeout_s=60.0,
        prompt="hi",
        env={"PATH": "/usr/bin", **env},
        config=config,
    )


def _open(request: AgentRequest, gateway: _Gateway) -> OpenedRun | None:
    with use_gateway(gateway):
        return open_run(AiderAdapter.gateway_wiring, request, operation_id="op", attempt_id="op/1")


def _launched(
    tmp_path: Path, located: Located, request: AgentRequest
) -> tuple[list[str], dict[str, str]]:
    """Aider's command line and environment for ``request``, as an attempt builds them."""
    settings = AiderAdapter().settings_for(request)
    root = tmp_path / "private"
    root.mkdir(exist_ok=True)
    files = AiderFiles(root)
    return command(located.path, files, request, settings), environment(
        files, located, request, settings
    )


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("openai/gpt-4o-mini", OPENAI),
        ("anthropic/claude-sonnet-4-5", ANTHROPIC),
        ("gemini/gemini-2.5-flash", GEMINI),
        ("gpt-4o-mini", OPENAI),  # bare names litellm gives a provider
        ("o4-mini", OPENAI),
        ("claude-sonnet-4-5", ANTHROPIC),
        ("sonnet", ANTHROPIC),  # Aider's aliases
        ("4o", OPENAI),
        ("flash", GEMINI),
        ("gemini", GEMINI),
        ("gemini-2.5-pro", GEMINI),
        # Any other model: Aider's OpenAI-compatible base URL (a bare gemini-… is Vertex's).
        ("gemini-2.5-flash", OPENAI),
        ("deepseek/deepseek-chat", OPENAI),
    ],
)
def test_a_model_s_provider_is_read_from_its_prefix(model: str, provider: object) -> None:
    assert provider_for(model) is provider


def test_an_anthropic_model_goes_through_the_gateway_with_its_own_variables(
    tmp_path: Path, located: Located
) -> None:
    gateway = _Gateway()
    opened = _open(_request(tmp_path, "anthropic/claude-sonnet-4-5", EVERYTHING), gateway)
    assert opened is not None
    ((run),) = gateway.opened
    assert (run["provider"], run["key"]) == ("anthropic", KEY)
    # ANTHROPIC_API_BASE is the one litellm reads first.
    assert run["upstream"] == "http://anthropic.test"
    argv, env = _launched(tmp_path, located, opened.request)
    assert env["ANTHROPIC_API_KEY"] == TOKEN
    assert env["ANTHROPIC_API_BASE"] == GATEWAY_URL
    assert "ANTHROPIC_BASE_URL" not in env
    assert KEY not in env.values()
    assert not {"OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"} & set(env)
    assert "--openai-api-base" not in argv
    # Aider's request timeout outlasts the gateway's deadline.
    assert argv[argv.index("--timeout") + 1] == f"{DEADLINE_S + GATEWAY_TIMEOUT_MARGIN_S:g}"


def test_a_gemini_model_goes_through_the_gateway_with_its_own_variables(
    tmp_path: Path, located: Located
) -> None:
    gateway = _Gateway()
    opened = _open(_request(tmp_path, "gemini/gemini-2.5-flash", EVERYTHING), gateway)
    assert opened is not None
    ((run),) = gateway.opened
    assert (run["provider"], run["key"]) == ("gemini", KEY)
    assert run["upstream"] == "http://gemini.test"  # /v1beta taken off
    argv, env = _launched(tmp_path, located, opened.request)
    assert env["GEMINI_API_KEY"] == TOKEN
    assert "GOOGLE_API_KEY" not in env  # litellm would read it before GEMINI_API_KEY
    assert env["GEMINI_API_BASE"] == f"{GATEWAY_URL}/v1beta"
    assert KEY not in env.values()
    assert not {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"} & set(env)
    assert "--openai-api-base" not in argv
    assert "--timeout" in argv


def test_an_openai_model_still_goes_through_with_openai_api_base(
    tmp_path: Path, located: Located
) -> None:
    gateway = _Gateway()
    opened = _open(_request(tmp_path, "openai/gpt-4o-mini", EVERYTHING), gateway)
    assert opened is not None
    assert gateway.opened[0]["upstream"] == "http://openai.test"
    argv, env = _launched(tmp_path, located, opened.request)
    assert argv[argv.index("--openai-api-base") + 1] == f"{GATEWAY_URL}/v1"
    # litellm reads OPENAI_BASE_URL before the OPENAI_API_BASE the flag sets.
    assert not {"OPENAI_BASE_URL", "OPENAI_API_BASE"} & set(env)
    assert env["OPENAI_API_KEY"] == TOKEN
    assert KEY not in env.values()


@pytest.mark.parametrize(
    ("model", "env"),
    [
        ("deepseek/deepseek-chat", {"OPENAI_API_KEY": KEY}),  # another provider: straight
        ("gemini-2.5-flash", {"GEMINI_API_KEY": KEY}),  # Vertex AI's, in litellm
        ("anthropic/claude-sonnet-4-5", {"OPENAI_API_KEY": KEY}),  # not its provider's key
        # A Gemini base URL the gateway cannot stand in for (not ending in /v1beta).
        ("gemini/gemini-2.5-flash", {"GEMINI_API_KEY": KEY, "GEMINI_API_BASE": "http://g/v1"}),
    ],
)
def test_nothing_is_opened_where_the_gateway_cannot_stand_in(
    tmp_path: Path, model: str, env: dict[str, str]
) -> None:
    gateway = _Gateway()
    request = _request(tmp_path, model, env)
    assert _open(request, gateway) is None
    assert gateway.opened == []
    with use_gateway(gateway):
        assert not through_gateway(AiderAdapter.gateway_wiring, request)


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("anthropic/claude-sonnet-4-5", "anthropic"),
        ("sonnet", "anthropic"),
        ("claude-haiku-4-5", "anthropic"),
        ("flash", "gemini"),
        ("4o", "openai"),
        ("gpt-5", "openai"),
    ],
)
def test_an_alias_or_a_bare_name_goes_through_with_its_provider_s_key(
    tmp_path: Path, located: Located, model: str, provider: str
) -> None:
    gateway = _Gateway()
    request = _request(tmp_path, model, EVERYTHING)
    with use_gateway(gateway):
        # The engine leaves the attempt's pacing to the gateway, as open_run decides.
        assert through_gateway(AiderAdapter.gateway_wiring, request)
    opened = _open(request, gateway)
    assert opened is not None
    assert gateway.opened[0]["provider"] == provider
    _, env = _launched(tmp_path, located, opened.request)
    assert KEY not in env.values()
    assert TOKEN in env.values()


def test_a_timeout_the_user_set_is_kept(tmp_path: Path, located: Located) -> None:
    request = _request(tmp_path, "anthropic/claude-x", {"ANTHROPIC_API_KEY": KEY}, timeout_s=30)
    opened = _open(request, _Gateway())
    assert opened is not None
    argv, _ = _launched(tmp_path, located, opened.request)
    assert argv[argv.index("--timeout") + 1] == "30"


@pytest.mark.parametrize(
    ("model", "variable", "dropped"),
    [
        ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"),
        ("gemini/gemini-2.5-flash", "GEMINI_API_BASE", None),
    ],
)
def test_the_base_url_setting_reaches_the_model_s_provider_without_a_gateway(
    tmp_path: Path, located: Located, model: str, variable: str, dropped: str | None
) -> None:
    request = _request(tmp_path, model, EVERYTHING, base_url="http://127.0.0.1:9/x")
    argv, env = _launched(tmp_path, located, request)
    assert env[variable] == "http://127.0.0.1:9/x"
    if dropped is not None:
        assert dropped not in env
    assert "--openai-api-base" not in argv
    assert "--timeout" not in argv  # Aider's own default


def test_an_anthropic_base_url_from_the_environment_is_handed_over_as_anthropic_api_base(
    tmp_path: Path, located: Located
) -> None:
    """Without a setting or a gateway, the user's own base URL goes in the variable
    litellm reads first."""
    request = _request(tmp_path, "anthropic/claude-sonnet-4-5", {"ANTHROPIC_BASE_URL": "http://a"})
    argv, env = _launched(tmp_path, located, request)
    assert env["ANTHROPIC_API_BASE"] == "http://a"
    assert "ANTHROPIC_BASE_URL" not in env
    assert "--openai-api-base" not in argv


def test_the_adapter_declares_every_variable_litellm_reads_for_a_base_url() -> None:
    endpoint = set(AiderAdapter.provider_env.endpoint)
    for provider in (OPENAI, ANTHROPIC, GEMINI):
        assert set(provider.base_urls) <= endpoint, provider.name
