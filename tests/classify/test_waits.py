"""Waits written in messages (``backstay.classify._waits``): an open circuit's next probe,
as the gateway's 503 words it, read from each agent CLI's report of that answer."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from backstay import FailureKind, classify_output
from backstay.classify._waits import wait_from_message
from backstay.errors import CircuitOpen
from backstay.gateway.wire_errors import gateway_error


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("circuit 'anthropic/claude-sonnet-4-5' is open; next probe in 27.412 s", 27.412),
        ("Next probe in 3 seconds", 3.0),
        ("circuit 'x' is open", None),  # a circuit whose probes are all taken: no wait
        ("the next probe is due", None),
    ],
)
def test_an_open_circuits_next_probe_is_a_wait(message: str, expected: float | None) -> None:
    assert wait_from_message(message) == expected


def _claude(body: str) -> str:
    result = {"type": "result", "subtype": "success", "is_error": True}
    return json.dumps({**result, "result": f"API Error: 503 {body}"})


def _codex(body: str) -> str:
    return json.dumps({"type": "error", "message": f"unexpected status 503: {body}"})


def _gemini(body: str) -> str:
    error = {"type": "unknown", "message": f"[API Error: {body}]"}
    return json.dumps({"type": "result", "status": "error", "error": error})


def _opencode(body: str) -> str:
    data = {"message": "Service Unavailable", "statusCode": 503, "responseBody": body}
    return json.dumps({"type": "error", "error": {"name": "APIError", "data": data}})


@pytest.mark.parametrize(
    ("agent", "provider", "output"),
    [
        ("claude-code", "anthropic", _claude),
        ("codex", "openai", _codex),
        ("gemini-cli", "gemini", _gemini),
        ("opencode", "openai", _opencode),
    ],
)
def test_a_cli_reporting_the_gateways_open_circuit_fails_with_its_probe_as_the_wait(
    agent: str, provider: str, output: Callable[[str], str]
) -> None:
    refused = CircuitOpen(f"{provider}/m", retry_after_s=27.4)
    answer = gateway_error(provider, 503, str(refused), retry_after_s=refused.retry_after_s)
    failure = classify_output(output(answer.body.decode()), agent=agent, exit_code=1)
    assert failure.kind is FailureKind.SERVER_ERROR
    assert failure.retry_after_s == pytest.approx(27.4)
