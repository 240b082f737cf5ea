"""Who may use the gateway and what it lets out: loopback by default, a token otherwise,
the client's key passed through and never in an event, a log line or an error."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import anthropic
import httpx
import pytest
from tests.gateway.helpers import (
    ANTHROPIC_MODEL,
    CANARY_KEY,
    FAST_POLICY,
    MESSAGES,
    anthropic_client,
    claude,
    gemini,
    served,
)

from backstay.errors import ConfigError
from backstay.fakeprovider import Fault, FaultKind
from backstay.gateway import TOKEN_HEADER, Gateway, GatewaySettings, Upstreams
from backstay.testing import capture_events

TOKEN = "gw-token-0123456789abcdef"


def _post(url: str, **headers: str) -> httpx.Response:
    return httpx.post(
        url + "/v1/messages",
        json={"model": ANTHROPIC_MODEL, "max_tokens": 50, "messages": MESSAGES},
        headers={"x-api-key": "test-key-123456", **headers},
        timeout=20,
    )


def test_a_non_loopback_address_is_refused_without_allow_remote() -> None:
    with pytest.raises(ConfigError, match="not a loopback address"):
        GatewaySettings(host="0.0.0.0", token=TOKEN)  # noqa: S104 - refused, never bound


def test_a_non_loopback_address_is_refused_without_a_token() -> None:
    with pytest.raises(ConfigError, match="needs a token"):
        GatewaySettings(host="0.0.0.0", allow_remote=True)  # noqa: S104


def test_a_short_token_is_refused() -> None:
    with pytest.raises(ConfigError, match="token"):
        GatewaySettings(token="short")


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_loopback_addresses_need_nothing(host: str) -> None:
    assert GatewaySettings(host=host).host == host


def test_with_a_token_a_request_without_it_is_refused(tmp_path: Path) -> None:
    with served(tmp_path, token=TOKEN) as s:
        refused = _post(s.url)
        wrong = _post(s.url, **{TOKEN_HEADER: "x" * 24})
        stats = s.fake.stats()
    assert refused.status_code == wrong.status_code == 401
    assert refused.json()["error"]["type"] == "authentication_error"
    assert stats.requests == 0


def test_with_a_token_a_request_carrying_it_is_forwarded(tmp_path: Path) -> None:
    with served(tmp_path, token=TOKEN) as s:
        answer = _post(s.url, **{TOKEN_HEADER: TOKEN})
    assert answer.status_code == 200


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_an_unreachable_upstream_is_a_502_in_the_providers_format() -> None:
    dead = f"http://127.0.0.1:{_free_port()}"
    settings = GatewaySettings(
        port=0, upstreams=Upstreams.all(dead), policy=FAST_POLICY.derive(max_attempts=2)
    )
    with Gateway(settings) as gateway, pytest.raises(anthropic.APIStatusError) as raised:
        claude(gateway.url)
    assert raised.value.status_code == 502
    assert "backstay gateway: the upstream failed: network" in str(raised.value)


def test_an_open_circuit_answers_at_once_without_the_upstream(tmp_path: Path) -> None:
    from backstay.breaker import BreakerSettings  # noqa: PLC0415

    breaker = BreakerSettings(failure_threshold=1, open_duration_s=3600)
    policy = FAST_POLICY.derive(max_attempts=1)
    with served(tmp_path, Fault(kind=FaultKind.SERVER_ERROR), breaker=breaker, policy=policy) as s:
        with pytest.raises(anthropic.InternalServerError):
            claude(s.url)  # the failure that opens the circuit
        with capture_events() as events, pytest.raises(anthropic.APIStatusError) as raised:
            claude(s.url)
        stats = s.fake.stats()
    assert raised.value.status_code == 503
    assert "is open" in str(raised.value)
    assert stats.requests == 1
    [event] = events.named("request.retried")
    assert event.outcome == "circuit_open"  # type: ignore[attr-defined]


def test_the_client_key_is_in_no_event_log_line_or_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    faults = (
        Fault(kind=FaultKind.OVERLOADED, first=1),
        Fault(kind=FaultKind.UNAUTHORIZED, requests=(3,)),
    )
    with served(tmp_path, *faults) as s, capture_events() as events:
        claude(s.url)
        with pytest.raises(anthropic.AuthenticationError):
            claude(s.url)
        gemini(s.url)
        httpx.post(
            s.url + f"/v1beta/models/gemini-2.5-flash:generateContent?key={CANARY_KEY}",
            json={"contents": [{"parts": [{"text": "hi"}]}]},
            timeout=20,
        )
    dead = f"http://127.0.0.1:{_free_port()}"
    settings = GatewaySettings(
        port=0, upstreams=Upstreams.all(dead), policy=FAST_POLICY.derive(max_attempts=2)
    )
    with (
        capture_events() as more,
        Gateway(settings) as gateway,
        pytest.raises(anthropic.APIStatusError) as raised,
    ):
        claude(gateway.url)
    written = json.dumps([e.to_dict() for e in [*events, *more]], default=str)
    assert events.named("request.retried")
    assert CANARY_KEY not in written
    ours = [r.getMessage() for r in caplog.records if r.name.startswith(("backstay", "aiohttp"))]
    assert ours  # the events reached the logging sink
    assert not [line for line in ours if CANARY_KEY in line]
    assert CANARY_KEY not in str(raised.value)
    assert CANARY_KEY not in s.log.read_text()


def test_the_breaker_of_one_model_leaves_another_model_alone(tmp_path: Path) -> None:
    from backstay.breaker import BreakerSettings  # noqa: PLC0415

    breaker = BreakerSettings(failure_threshold=1, open_duration_s=3600)
    fault = Fault(kind=FaultKind.SERVER_ERROR, model="claude-haiku-4-5")
    policy = FAST_POLICY.derive(max_attempts=1)
    with served(tmp_path, fault, breaker=breaker, policy=policy) as s:
        with anthropic_client(s.url) as client, pytest.raises(anthropic.InternalServerError):
            client.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=MESSAGES)  # type: ignore[arg-type]
        text = claude(s.url)  # claude-sonnet-4-6: its own, closed circuit
        health = s.gateway.breakers.health()
    assert text
    assert health["anthropic/claude-haiku-4-5"].state == "open"
    assert health["anthropic/claude-sonnet-4-6"].state == "closed"
