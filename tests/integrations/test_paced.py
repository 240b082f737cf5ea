"""The transports' per-request view of a shared rate limiter: token estimates from request
bodies, and the provider's headers read against the reservation they answer (real httpx
client, real local server, ``FakeClock``)."""

from __future__ import annotations

import json

import httpx
import pytest
from tests.adapters.api_server import ApiServer, Canned

from backstay.integrations import RetryTransport
from backstay.integrations._paced import estimate_tokens
from backstay.policy.ratelimit import RateLimiter
from backstay.policy.retry import RetryPolicy
from backstay.testing.fakeclock import FakeClock

POLICY = RetryPolicy(name="t", max_attempts=2, jitter=0.0)


def _json(body: object) -> bytes:
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("body", "tokens"),
    [
        (b"", 0.0),
        (b"not json at all!", 4.0),
        (_json({"model": "gpt-5", "messages": [{"role": "user", "content": "x" * 40}]}), 10.0),
        (_json({"model": "m", "max_tokens": 100, "messages": [{"content": "y" * 8}]}), 102.0),
        (_json({"input": "z" * 20, "max_output_tokens": 50}), 55.0),
        (
            _json(
                {"system": "abcd", "messages": [{"content": [{"type": "text", "text": "efgh"}]}]}
            ),
            2.0,
        ),
        (
            _json(
                {
                    "contents": [{"parts": [{"text": "q" * 12}]}],
                    "generationConfig": {"maxOutputTokens": 7},
                }
            ),
            10.0,
        ),
        (_json({"max_completion_tokens": True, "messages": []}), 0.0),
    ],
)
def test_a_request_is_estimated_by_its_text_and_its_output_limit(
    body: bytes, tokens: float
) -> None:
    assert estimate_tokens(body) == tokens


def _limiter(clock: FakeClock) -> RateLimiter:
    return RateLimiter("openai", tokens_per_minute=60_000, burst_s=1.0, clock=clock)


def test_the_transport_reserves_the_requests_estimated_tokens() -> None:
    clock = FakeClock()
    limiter = _limiter(clock)
    body = {"model": "gpt-5", "max_tokens": 100, "messages": [{"content": "w" * 400}]}
    with ApiServer(lambda _r: Canned(body={"ok": True})) as server:
        transport = RetryTransport(
            httpx.HTTPTransport(), policy=POLICY, limiter=limiter, clock=clock
        )
        with httpx.Client(transport=transport) as client:
            assert client.post(server.url, json=body).status_code == 200
    tokens = limiter.snapshot().tokens
    assert tokens is not None
    assert tokens.tokens == 1000.0 - 200.0


def test_the_remaining_the_provider_reports_for_a_request_sets_the_level() -> None:
    clock = FakeClock()
    limiter = _limiter(clock)
    reply = Canned(body={"ok": True}, headers={"x-ratelimit-remaining-tokens": "1000"})
    with ApiServer(lambda _r: reply) as server:
        transport = RetryTransport(
            httpx.HTTPTransport(), policy=POLICY, limiter=limiter, clock=clock
        )
        with httpx.Client(transport=transport) as client:
            client.post(server.url, json={"messages": [{"content": "w" * 400}]})
    tokens = limiter.snapshot().tokens
    assert tokens is not None
    # 100 were reserved, but the provider says its 1,000 are all left: it knows.
    assert tokens.tokens == 1000.0
