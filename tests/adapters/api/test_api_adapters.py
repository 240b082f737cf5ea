"""What the API adapters do on the wire and leave behind: the real SDKs against a real
local server (``api_server``) in each provider's format, streamed and whole.

One behaviour per test, each for every adapter configuration: Anthropic Messages, OpenAI
Chat Completions, OpenAI Responses, Gemini.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.adapters.api_server import ApiServer, Recorded
from tests.adapters.api_support import (
    PARTS,
    PROVIDERS,
    TEXT,
    Router,
    base_url,
    dispatch,
    key_env,
    wire_for,
)
from tests.adapters.api_wire import CACHED, OUTPUT, UNCACHED
from tests.adapters.support import CANARY_KEY

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.api.base import ApiAdapter
from backstay.adapters.api.gemini import GeminiApiAdapter
from backstay.adapters.api.openai import OpenAIApiAdapter
from backstay.adapters.contract import AgentResult, AgentStatus
from backstay.errors import AdapterError
from backstay.taxonomy import FailureKind

# (id, adapter class, api)
SETUPS = [
    pytest.param((AnthropicApiAdapter, "chat"), id="anthropic"),
    pytest.param((OpenAIApiAdapter, "chat"), id="openai-chat"),
    pytest.param((OpenAIApiAdapter, "responses"), id="openai-responses"),
    pytest.param((GeminiApiAdapter, "chat"), id="gemini"),
]


class Setup:
    """One adapter configuration talking to its own server."""

    def __init__(self, cls: type[ApiAdapter], api: str, *, stream: bool) -> None:
        self.adapter = cls()
        self.name = cls.name
        self.api = api
        self.stream = stream
        self.router = Router(wire_for(self.name, api=api, stream=stream))
        self.server = ApiServer(self.router)

    def config(self, scenario: str, **extra: Any) -> dict[str, Any]:
        config: dict[str, Any] = {
            "base_url": base_url(self.server, self.name, scenario),
            "stream": self.stream,
            **extra,
        }
        if self.api != "chat":
            config["api"] = self.api
        return config

    def run(
        self, tmp_path: Path, scenario: str, **kwargs: Any
    ) -> tuple[AgentResult | AdapterError, Path]:
        extra = kwargs.pop("config", {})
        return dispatch(
            self.adapter,
            tmp_path,
            config=self.config(scenario, **extra),
            env=kwargs.pop("env", key_env(self.name)),
            **kwargs,
        )


@pytest.fixture(params=SETUPS)
def setup(request: pytest.FixtureRequest) -> Iterator[Setup]:
    cls, api = request.param
    made = Setup(cls, api, stream=True)
    with made.server:
        yield made


@pytest.fixture(params=[True, False], ids=["stream", "whole"])
def both(setup: Setup, request: pytest.FixtureRequest) -> Setup:
    setup.stream = request.param
    setup.router.wire.stream = request.param
    return setup


def _logs(out: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in out.iterdir() if p.is_file()}


def _key_header(request: Recorded) -> str:
    headers = request.headers
    return headers.get("x-api-key") or headers.get("x-goog-api-key") or headers["authorization"]


def test_a_reply_is_the_result_with_its_usage(both: Setup, tmp_path: Path) -> None:
    result, _ = both.run(tmp_path, "success")
    assert isinstance(result, AgentResult), result
    assert (result.status, result.output) == (AgentStatus.SUCCEEDED, TEXT)
    usage = result.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (
        UNCACHED,
        CACHED,
        OUTPUT,
    )
    assert usage.api_calls == 1


def test_the_reply_is_written_to_stdout_and_line_by_line_to_agent_log(
    both: Setup, tmp_path: Path
) -> None:
    _, out = both.run(tmp_path, "success")
    logs = _logs(out)
    assert logs["stdout.log"] == TEXT
    assert "assistant | Hello, world.\n" in logs["agent.log"]
    assert "assistant | Second line\n" in logs["agent.log"]
    assert "user | Say hello.\n" in logs["agent.log"]


def test_the_stream_setting_chooses_streaming(both: Setup, tmp_path: Path) -> None:
    both.run(tmp_path, "success")
    (request,) = both.server.seen()
    body = request.json()
    if both.name == "gemini-api":
        assert ("streamGenerateContent" in request.path) is both.stream
    else:
        assert bool(body.get("stream")) is both.stream


def test_the_key_and_the_prompt_come_from_the_request(setup: Setup, tmp_path: Path) -> None:
    setup.run(tmp_path, "success", system="Be brief.")
    (request,) = setup.server.seen()
    assert CANARY_KEY in _key_header(request)
    body = json.dumps(request.json())
    assert "Say hello." in body
    assert "Be brief." in body


def test_every_attempt_sends_the_operation_id_as_its_idempotency_key(
    setup: Setup, tmp_path: Path
) -> None:
    for attempt in (1, 2, 3):
        setup.run(tmp_path, "network_error", operation_id="wf/task/run_01", attempt=attempt)
    keys = [r.headers.get("idempotency-key") for r in setup.server.seen()]
    assert keys == ["wf/task/run_01"] * 3


def test_the_sdk_retries_nothing_itself(setup: Setup, tmp_path: Path) -> None:
    outcome, _ = setup.run(tmp_path, "overloaded")
    assert isinstance(outcome, AdapterError)
    assert outcome.failure.kind is FailureKind.SERVER_ERROR
    assert len(setup.server.seen()) == 1


def test_a_dropped_connection_is_one_request_and_a_network_failure(
    setup: Setup, tmp_path: Path
) -> None:
    outcome, _ = setup.run(tmp_path, "network_error")
    assert isinstance(outcome, AdapterError)
    assert outcome.failure.kind is FailureKind.NETWORK
    assert len(setup.server.seen()) == 1


def test_an_error_inside_the_stream_keeps_the_output_delivered_before_it(
    setup: Setup, tmp_path: Path
) -> None:
    outcome, out = setup.run(tmp_path, "stream_error")
    assert isinstance(outcome, AdapterError), outcome
    delivered = "".join(PARTS[:2])
    assert outcome.partial_output == delivered
    failure = outcome.failure
    assert failure.kind is FailureKind.SERVER_ERROR, failure
    assert failure.details["stream_interrupted"] is True
    assert failure.details["partial_output_chars"] == len(delivered)
    assert failure.details["partial_output_tail"] == delivered
    assert f"after delivering {len(delivered)} characters" in failure.message
    assert _logs(out)["stdout.log"] == delivered


def test_a_stream_cut_mid_body_is_a_network_failure_with_its_partial_output(
    setup: Setup, tmp_path: Path
) -> None:
    outcome, _ = setup.run(tmp_path, "cut")
    assert isinstance(outcome, AdapterError), outcome
    assert outcome.failure.kind is FailureKind.NETWORK, outcome.failure
    assert outcome.partial_output == "".join(PARTS[:2])
    assert outcome.failure.details["stream_interrupted"] is True


def test_a_stalled_stream_fails_at_the_stall_limit(setup: Setup, tmp_path: Path) -> None:
    outcome, _ = setup.run(tmp_path, "stall", stall_timeout_s=0.5)
    assert isinstance(outcome, AdapterError), outcome
    assert outcome.failure.code == "ERR_STREAM_STALLED"
    assert outcome.partial_output


def test_a_missing_key_fails_as_auth_before_any_request(setup: Setup, tmp_path: Path) -> None:
    outcome, _ = setup.run(tmp_path, "success", env={})
    assert isinstance(outcome, AdapterError)
    assert outcome.failure.code == "ERR_AUTH_MISSING_CREDENTIALS"
    assert PROVIDERS[setup.name][0] in outcome.failure.message
    assert setup.server.seen() == []


def test_api_key_env_names_the_variable_to_read(setup: Setup, tmp_path: Path) -> None:
    env = {"MY_KEY": CANARY_KEY, PROVIDERS[setup.name][0]: "sk-ant-api03-NotThisOneNotThisOne"}
    setup.run(tmp_path, "success", env=env, config={"api_key_env": "MY_KEY"})
    (request,) = setup.server.seen()
    assert CANARY_KEY in _key_header(request)


def test_the_key_never_reaches_logs_errors_or_metrics(setup: Setup, tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Say hello.", encoding="utf-8")
    out = tmp_path / "harness"
    code = setup.adapter.run(
        "contract-model",
        prompt,
        tmp_path,
        out,
        setup.config("echo_key"),
        30.0,
        env=key_env(setup.name),
    )
    assert code == 1
    (request,) = setup.server.seen()
    assert CANARY_KEY in _key_header(request)  # the server did get it, and echoed it
    logs = _logs(out)
    assert set(logs) == {"stdout.log", "stderr.log", "agent.log", "metrics.json"}
    assert "invalid credentials" in logs["metrics.json"]
    for name, text in logs.items():
        assert CANARY_KEY not in text, name
        assert CANARY_KEY[:20] not in text, name


def test_metrics_carry_the_tokens_and_the_configured_cost(setup: Setup, tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Say hello.", encoding="utf-8")
    out = tmp_path / "harness"
    prices = {"contract-model": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}}
    config = setup.config("success", prices=prices)
    code = setup.adapter.run(
        "contract-model", prompt, tmp_path, out, config, 30.0, env=key_env(setup.name)
    )
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["tokens_input"] == UNCACHED + CACHED
    assert metrics["tokens_output"] == OUTPUT
    assert metrics["api_calls"] == 1
    assert metrics["cost_usd"] == pytest.approx(((UNCACHED + CACHED) * 3.0 + OUTPUT * 15.0) / 1e6)
    assert "cost: " in (out / "agent.log").read_text()


def test_an_unpriced_model_has_an_unknown_cost(setup: Setup, tmp_path: Path) -> None:
    result, out = setup.run(tmp_path, "success", model="no-such-model-anywhere")
    assert isinstance(result, AgentResult)
    assert result.usage.cost_usd is None
    assert "cost: unknown (unknown: genai-prices" in _logs(out)["agent.log"]
