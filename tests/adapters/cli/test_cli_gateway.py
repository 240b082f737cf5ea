"""How an agent CLI attempt is pointed at a gateway (``backstay.adapters.gateway_wiring``):
the run token in place of the key, the gateway as the base URL, the real key and upstream
told to the gateway only, the CLI's own timeout raised above the gateway's deadline, and
the attempt's usage taken from the gateway's counts. The gateway here is a recording
stand-in; tests/gateway/test_runs_clis.py runs the real one with the real CLIs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from tests.adapters.support import CANARY_KEY

from backstay.adapters.cli.aider import AiderAdapter
from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.cli.codex import CodexAdapter
from backstay.adapters.cli.codex.settings import config_toml
from backstay.adapters.cli.gemini_cli import GeminiCliAdapter
from backstay.adapters.cli.opencode import OpencodeAdapter
from backstay.adapters.cli.opencode.settings import config_content
from backstay.adapters.contract import AgentRequest
from backstay.adapters.gateway_wiring import (
    GATEWAY_TIMEOUT_MARGIN_S,
    OpenedRun,
    open_run,
    use_gateway,
)
from backstay.adapters.usage import Usage
from backstay.agents import CLIS
from backstay.agents.locate import Located
from backstay.events.tracecontext import TraceContext, set_current
from backstay.failure import Failure
from backstay.testing import ScriptedAdapter

TOKEN = "bsgw-run-test-token"
GATEWAY_URL = "http://127.0.0.1:4321"
DEADLINE_S = 900.0


@dataclasses.dataclass
class _Counts:
    requests: int = 8
    input_tokens: int = 100
    output_tokens: int = 20
    cache_read_tokens: int = 3
    cache_write_tokens: int = 0


class _Gateway:
    url = GATEWAY_URL
    deadline_s = DEADLINE_S

    def __init__(self) -> None:
        self.opened: list[dict[str, Any]] = []
        self.closed: list[str] = []

    def open_run(self, **run: Any) -> str:
        self.opened.append(run)
        return TOKEN

    def close_run(self, token: str) -> _Counts:
        self.closed.append(token)
        return _Counts()


def _request(tmp_path: Path, env: dict[str, str], **config: Any) -> AgentRequest:
    return AgentRequest(
        model="m-1",
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        timeout_s=60.0,
        prompt="hi",
        env={"PATH": "/usr/bin", **env},
        config=config,
    )


def _open(adapter: Any, request: AgentRequest, gateway: _Gateway) -> OpenedRun | None:
    with use_gateway(gateway):
        return open_run(adapter.gateway_wiring, request, operation_id="op", attempt_id="op/1")


def _located(tmp_path: Path, name: str) -> Located:
    return Located(spec=CLIS[name], path=tmp_path / "cli", version="1.0", source="test")


def test_claude_code_gets_the_token_and_the_gateway_and_the_gateway_the_key(
    tmp_path: Path,
) -> None:
    gateway = _Gateway()
    request = _request(
        tmp_path,
        {"ANTHROPIC_API_KEY": CANARY_KEY, "ANTHROPIC_BASE_URL": "http://upstream.test:1"},
    )
    opened = _open(ClaudeCodeAdapter(), request, gateway)
    assert opened is not None
    ((run),) = gateway.opened
    assert run["provider"] == "anthropic"
    assert run["key"] == CANARY_KEY
    assert run["upstream"] == "http://upstream.test:1"
    assert (run["task"], run["attempt"], run["model"]) == ("op", "op/1", "m-1")
    adapter = ClaudeCodeAdapter()
    settings = adapter.settings_for(opened.request)
    env = adapter.environment(
        opened.request, settings, _located(tmp_path, "claude-code"), tmp_path / "home"
    )
    assert env["ANTHROPIC_API_KEY"] == TOKEN
    assert env["ANTHROPIC_BASE_URL"] == GATEWAY_URL
    assert env["API_TIMEOUT_MS"] == str(round((DEADLINE_S + GATEWAY_TIMEOUT_MARGIN_S) * 1000))
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert CANARY_KEY not in env.values()


def test_a_timeout_the_user_set_is_kept(tmp_path: Path) -> None:
    request = _request(tmp_path, {"ANTHROPIC_API_KEY": CANARY_KEY}, api_timeout_s=30)
    opened = _open(ClaudeCodeAdapter(), request, _Gateway())
    assert opened is not None
    assert opened.request.config["api_timeout_s"] == 30


def test_an_auth_token_is_stood_in_for_in_its_own_variable(tmp_path: Path) -> None:
    gateway = _Gateway()
    request = _request(tmp_path, {"ANTHROPIC_AUTH_TOKEN": CANARY_KEY})
    opened = _open(ClaudeCodeAdapter(), request, gateway)
    assert opened is not None
    assert opened.request.env["ANTHROPIC_AUTH_TOKEN"] == TOKEN
    assert "ANTHROPIC_API_KEY" not in opened.request.env
    assert gateway.opened[0]["upstream"] is None  # the provider's default


def test_gemini_cli_gets_the_token_and_the_gateway(tmp_path: Path) -> None:
    gateway = _Gateway()
    request = _request(tmp_path, {"GEMINI_API_KEY": CANARY_KEY, "GOOGLE_API_KEY": CANARY_KEY})
    opened = _open(GeminiCliAdapter(), request, gateway)
    assert opened is not None
    adapter = GeminiCliAdapter()
    settings = adapter.settings_for(opened.request)
    env = adapter.environment(opened.request, settings, _located(tmp_path, "gemini-cli"), {})
    assert env["GEMINI_API_KEY"] == TOKEN
    assert "GOOGLE_API_KEY" not in env
    assert env["GOOGLE_GEMINI_BASE_URL"] == GATEWAY_URL
    assert gateway.opened[0]["provider"] == "gemini"
    # Its request timeout (a fetch preload in the run's home) outlasts the gateway's deadline.
    home_env = adapter.write_home(opened.request, settings, tmp_path / "home")
    timeout_ms = round((DEADLINE_S + GATEWAY_TIMEOUT_MARGIN_S) * 1000)
    assert home_env["BACKSTAY_FETCH_TIMEOUT_MS"] == str(timeout_ms)
    assert "--require" in home_env["NODE_OPTIONS"]


def test_codex_config_names_the_gateway_and_its_upstream_loses_the_v1(tmp_path: Path) -> None:
    gateway = _Gateway()
    request = _request(
        tmp_path, {"OPENAI_API_KEY": CANARY_KEY, "OPENAI_BASE_URL": "http://upstream.test:1/v1"}
    )
    opened = _open(CodexAdapter(), request, gateway)
    assert opened is not None
    assert gateway.opened[0]["upstream"] == "http://upstream.test:1"
    settings = CodexAdapter().settings_for(opened.request)
    toml = config_toml(settings, None)
    assert f'base_url = "{GATEWAY_URL}/v1"' in toml
    idle_ms = round((DEADLINE_S + GATEWAY_TIMEOUT_MARGIN_S) * 1000)
    assert f"stream_idle_timeout_ms = {idle_ms}" in toml
    assert opened.request.env["OPENAI_API_KEY"] == TOKEN
    assert "OPENAI_BASE_URL" not in opened.request.env


def test_opencode_reads_the_token_from_its_api_key_env(tmp_path: Path) -> None:
    gateway = _Gateway()
    request = _request(tmp_path, {"MY_KEY": CANARY_KEY}, api_key_env="MY_KEY")
    opened = _open(OpencodeAdapter(), request, gateway)
    assert opened is not None
    assert opened.request.env["MY_KEY"] == TOKEN
    settings = OpencodeAdapter().settings_for(opened.request)
    content = config_content(settings, "m-1", None)
    assert f"{GATEWAY_URL}/v1" in content
    assert CANARY_KEY not in content
    options = json.loads(content)["provider"]["openai"]["options"]
    timeout_ms = round((DEADLINE_S + GATEWAY_TIMEOUT_MARGIN_S) * 1000)
    assert (options["headerTimeout"], options["chunkTimeout"]) == (timeout_ms, timeout_ms)


@pytest.mark.parametrize(
    "env",
    [
        {},  # no key: the adapter reports it, as without a gateway
        {"OPENAI_API_KEY": CANARY_KEY, "OPENAI_BASE_URL": "http://up.test/api"},
    ],
)
def test_nothing_is_opened_without_a_key_or_for_a_base_url_it_cannot_stand_in_for(
    tmp_path: Path, env: dict[str, str]
) -> None:
    gateway = _Gateway()
    assert _open(CodexAdapter(), _request(tmp_path, env), gateway) is None
    assert gateway.opened == []


def test_nothing_is_opened_without_a_gateway(tmp_path: Path) -> None:
    request = _request(tmp_path, {"ANTHROPIC_API_KEY": CANARY_KEY})
    wiring = ClaudeCodeAdapter.gateway_wiring
    assert open_run(wiring, request, operation_id="op", attempt_id="op/1") is None


def test_the_attempts_usage_is_the_gateways_count_and_its_cost_is_kept(tmp_path: Path) -> None:
    gateway = _Gateway()
    opened = _open(ClaudeCodeAdapter(), _request(tmp_path, {"ANTHROPIC_API_KEY": "k"}), gateway)
    assert opened is not None
    usage = opened.counted(Usage(input_tokens=5, output_tokens=1, api_calls=1, cost_usd=0.5))
    assert usage == Usage(
        input_tokens=100, output_tokens=20, cache_read_tokens=3, api_calls=8, cost_usd=0.5
    )
    opened.close()
    assert gateway.closed == [TOKEN]  # revoked once


def test_the_gateway_is_told_the_attempts_trace_context(tmp_path: Path) -> None:
    gateway = _Gateway()
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    set_current(TraceContext(traceparent=traceparent))
    try:
        opened = _open(ClaudeCodeAdapter(), _request(tmp_path, {"ANTHROPIC_API_KEY": "k"}), gateway)
    finally:
        set_current(None)
    assert opened is not None
    assert gateway.opened[0]["traceparent"] == traceparent


def test_aider_goes_through_for_a_served_providers_model_losing_other_keys(tmp_path: Path) -> None:
    gateway = _Gateway()
    env = {
        "OPENAI_API_KEY": CANARY_KEY,
        "OPENAI_BASE_URL": "http://upstream.test:1/v1",
        "ANTHROPIC_API_KEY": CANARY_KEY,
    }
    opened = _open(AiderAdapter(), _request(tmp_path, env), gateway)
    assert opened is None  # "m-1" names no provider the gateway serves: straight to it
    request = dataclasses.replace(_request(tmp_path, env), model="openai/gpt-4o-mini")
    opened = _open(AiderAdapter(), request, gateway)
    assert opened is not None
    assert gateway.opened[0]["upstream"] == "http://upstream.test:1"
    assert opened.request.config["base_url"] == f"{GATEWAY_URL}/v1"
    assert dict(opened.request.env) == {"PATH": "/usr/bin", "OPENAI_API_KEY": TOKEN}


class _Refused(ScriptedAdapter):
    """An agent whose one request is refused with a 503 it reports (no usage of its own),
    pointed at the gateway as Claude Code is."""

    gateway_wiring = ClaudeCodeAdapter.gateway_wiring


class _Unanswered(_Gateway):
    """A gateway that answered none of the run's requests itself (its open circuit did)."""

    def close_run(self, token: str) -> _Counts:
        self.closed.append(token)
        return _Counts(requests=0, input_tokens=0, output_tokens=0, cache_read_tokens=0)


@pytest.mark.parametrize(("gateway", "api_calls"), [(None, 1), (_Unanswered(), 0)])
def test_a_refusal_no_provider_answered_counts_no_api_call_through_the_gateway(
    tmp_path: Path, gateway: _Gateway | None, api_calls: int
) -> None:
    refused = Failure(code="ERR_HTTP_503_UNAVAILABLE", status=503)
    adapter = _Refused([refused])
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("hi", encoding="utf-8")
    with use_gateway(gateway):
        code = adapter.run(
            "m-1",
            prompt,
            tmp_path,
            tmp_path / "out",
            {},
            30.0,
            env={"ANTHROPIC_API_KEY": CANARY_KEY},
            policy="no_retry",
            inherit_env=False,
        )
    assert code != 0
    # Without a gateway the CLI's HTTP status shows one answered call; through one, the
    # gateway's count (none reached a provider) is the attempt's.
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["api_calls"] == api_calls
