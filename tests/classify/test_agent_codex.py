"""Codex CLI (``codex exec --json``) output → ``Failure``.

Codex writes JSONL: ``Reconnecting... n/5`` notices as ``error`` events while it retries,
then the final ``error`` and ``turn.failed``. Each case names its source in the comment
above it; "probe" marks text observed by running Codex CLI 0.169.0 non-interactively
against a local fake provider.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from tests.classify.expect import AgentCase as Case
from tests.classify.expect import assert_output_case

from backstay import FailureKind, check_output, classify_output

AGENT = "codex"
NOW = dt.datetime(2026, 2, 3, 12, 0, tzinfo=dt.UTC)

_THREAD = {"type": "thread.started", "thread_id": "019c2470-729c-7dc1-b60a-365dad515395"}
_TURN = {"type": "turn.started"}


def _reconnect(n: int, why: str) -> dict[str, Any]:
    return {"type": "error", "message": f"Reconnecting... {n}/5 ({why})"}


def _jsonl(*events: dict[str, Any]) -> str:
    return "\n".join(json.dumps(e) for e in events) + "\n"


def _failed(message: str, *, reconnects: int = 0) -> str:
    """The stream of one failed turn, with ``reconnects`` retry notices before it."""
    return _jsonl(
        _THREAD,
        _TURN,
        *(_reconnect(n, message) for n in range(1, reconnects + 1)),
        {"type": "error", "message": message},
        {"type": "turn.failed", "error": {"message": message}},
    )


CASES = [
    # openai/codex#10550, #9148; probe (429)
    Case(
        "turn_failed_429_retry_limit",
        _failed(
            "exceeded retry limit, last status: 429 Too Many Requests, "
            "request id: 9c84b52ce87fbe62-SJC",
            reconnects=5,
        ),
        "rate_limit",
        "ERR_HTTP_429_RATE_LIMITED",
    ),
    # probe (500: no status in the text); openai/codex#8658, #6761
    Case(
        "turn_failed_500_high_demand",
        _failed(
            "We’re currently experiencing high demand, which may cause temporary errors.",
            reconnects=5,
        ),
        "server_error",
        "ERR_LLM_OVERLOADED",
    ),
    # probe (529)
    Case(
        "turn_failed_529",
        _failed(
            "unexpected status 529 <unknown status code>: Overloaded, "
            "url: http://127.0.0.1:41877/v1/responses"
        ),
        "server_error",
        "ERR_HTTP_529_OVERLOADED",
    ),
    # openai/codex#35320
    Case(
        "turn_failed_503",
        _failed(
            "unexpected status 503 Service Unavailable: Service Unavailable, "
            "url: https://chatgpt.com/backend-api/codex/responses, "
            "cf-ray: a20a1b76cfb9c49d-NRT, auth error: 503, "
            "auth error code: biscuit_baker_service_me_circuit_open"
        ),
        "server_error",
        "ERR_HTTP_503_UNAVAILABLE",
    ),
    # openai/codex#26497; probe (401)
    Case(
        "turn_failed_401_unauthorized",
        _failed(
            'unexpected status 401 Unauthorized: {"detail":"Unauthorized"}, '
            "url: https://chatgpt.com/backend-api/codex/responses, "
            "cf-ray: a06b9c52d979eaa1-ICN, request id: 572c4a16-275a-4be4-9b9f-6577df485f52"
        ),
        "auth",
        "ERR_HTTP_401_UNAUTHORIZED",
    ),
    # decolua/9router#670 (Codex against a local gateway)
    Case(
        "turn_failed_401_invalid_api_key",
        _failed(
            "unexpected status 401 Unauthorized: Invalid API key, "
            "url: http://localhost:20128/v1/responses"
        ),
        "auth",
        "ERR_AUTH_INVALID_KEY",
    ),
    # openai/codex#31535, #14310; probe (context)
    Case(
        "turn_failed_context_window",
        _failed(
            "Codex ran out of room in the model's context window. Start a new thread or "
            "clear earlier history before retrying."
        ),
        "context_limit",
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # openai/codex#17042, vercel-labs/deepsec#32; probe (insufficient_quota)
    Case(
        "turn_failed_quota_exceeded",
        _failed("Quota exceeded. Check your plan and billing details."),
        "quota_exhausted",
        "ERR_LLM_QUOTA_EXHAUSTED",
    ),
    # probe (unset env_key: no request, plain text); Emanuele-web04/remodex#114
    Case(
        "text_missing_environment_variable",
        "Error: Missing environment variable: `LOCAL_KEY`.\n",
        "auth",
        "ERR_AUTH_MISSING_CREDENTIALS",
    ),
    # probe (stall + stream_idle_timeout_ms); openai/codex#3229
    Case(
        "turn_failed_idle_timeout",
        _failed(
            "stream disconnected before completion: idle timeout waiting for SSE",
            reconnects=5,
        ),
        "timeout",
        "ERR_STREAM_STALLED",
    ),
    # openai/codex#10062 (mid-stream rate limit is a rate limit, not a network failure)
    Case(
        "turn_failed_midstream_rate_limit",
        _failed(
            "stream disconnected before completion: Rate limit reached for gpt-5.2-codex in "
            "organization org-XXXXXXXXXXXXXXXXXXXXXXXX on tokens per min (TPM): Limit "
            "500000, Used 500000, Requested 12080. Please try again in 34.337s. Visit "
            "https://platform.openai.com/account/rate-limits to learn more.",
            reconnects=5,
        ),
        "rate_limit",
        retry_after_s=34.337,
    ),
    # openai/codex#3764 (Azure wording, whole seconds)
    Case(
        "turn_failed_midstream_rate_limit_seconds",
        _failed(
            "stream disconnected before completion: Rate limit is exceeded. "
            "Try again in 11 seconds.",
            reconnects=5,
        ),
        "rate_limit",
        retry_after_s=11.0,
    ),
    # router-for-me/CLIProxyAPI#2410 (the stream closed early: a transport failure)
    Case(
        "turn_failed_stream_closed",
        _failed(
            "stream disconnected before completion: stream closed before response.completed",
            reconnects=5,
        ),
        "network",
        "ERR_CONNECTION_CLOSED",
    ),
    # wzj998/ChatCCC#363: codex exec can emit turn.failed and still exit 0
    Case(
        "turn_failed_with_exit_zero",
        _failed("We’re currently experiencing high demand, which may cause temporary errors."),
        "server_error",
        exit_code=0,
    ),
]

PARAMS = [pytest.param(c, id=c.id) for c in CASES]


@pytest.mark.parametrize("case", PARAMS)
def test_output_classifies_as_documented(case: Case) -> None:
    assert_output_case(case, agent=AGENT, now=NOW)


def test_final_message_wins_over_reconnect_notices() -> None:
    # probe: the notices repeat the transient cause; turn.failed carries the final one
    text = _jsonl(
        _THREAD,
        _TURN,
        _reconnect(1, "stream disconnected before completion: idle timeout waiting for SSE"),
        {"type": "error", "message": "Quota exceeded. Check your plan and billing details."},
        {
            "type": "turn.failed",
            "error": {"message": "Quota exceeded. Check your plan and billing details."},
        },
    )
    found = classify_output(text, agent=AGENT, exit_code=1, now=NOW)
    assert found.kind is FailureKind.QUOTA_EXHAUSTED


# --- success: check_output returns None ------------------------------------------------

_COMPLETED = {
    "type": "turn.completed",
    "usage": {"input_tokens": 24763, "cached_input_tokens": 24448, "output_tokens": 122},
}
_ANSWER = {
    "type": "item.completed",
    "item": {"id": "item_0", "type": "agent_message", "text": "Done."},
}

SUCCESSES = [
    # probe: stream retries ("Reconnecting... n/5") that end in a completed turn
    pytest.param(
        _jsonl(
            _THREAD,
            _TURN,
            _reconnect(1, "stream disconnected before completion: idle timeout waiting for SSE"),
            _reconnect(2, "stream disconnected before completion: idle timeout waiting for SSE"),
            _ANSWER,
            _COMPLETED,
        ),
        0,
        id="reconnects_then_success_rc0",
    ),
    pytest.param(
        _jsonl(
            _THREAD,
            _TURN,
            _reconnect(1, "exceeded retry limit, last status: 429 Too Many Requests"),
            _ANSWER,
            _COMPLETED,
        ),
        None,
        id="reconnects_then_success_no_exit_code",
    ),
    # probe: unknown model names give a harmless item.completed of type error
    pytest.param(
        _jsonl(
            _THREAD,
            _TURN,
            {
                "type": "item.completed",
                "item": {
                    "id": "item_0",
                    "type": "error",
                    "message": "Model metadata for `fake-model` not found. Defaulting to "
                    "fallback metadata; this can degrade performance and cause issues.",
                },
            },
            _ANSWER,
            _COMPLETED,
        ),
        None,
        id="model_metadata_warning_then_success",
    ),
]


@pytest.mark.parametrize(("text", "exit_code"), SUCCESSES)
def test_success_is_none(text: str, exit_code: int | None) -> None:
    assert check_output(text, agent=AGENT, exit_code=exit_code, now=NOW) is None
