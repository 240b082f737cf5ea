"""``RetryTransport`` / ``AsyncRetryTransport`` inside real httpx and httpx2 clients,
against a real local server; waits are taken on a ``FakeClock``."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import httpx2
import pytest
from tests.adapters.api_server import ApiServer, Canned, Recorded

from backstay.breaker import CircuitBreaker
from backstay.errors import CircuitOpen, ConfigError
from backstay.integrations import AsyncRetryTransport, RetryTransport
from backstay.policy.retry import RETRY_AFTER_MARGIN_S, RetryPolicy
from backstay.testing.fakeclock import FakeClock

POLICY = RetryPolicy(
    name="t", max_attempts=3, initial_delay_s=1.0, multiplier=2.0, jitter=0.0, max_delay_s=10.0
)
OK = Canned(body={"ok": True})
BUSY = Canned(status=503, body={"error": {"message": "busy", "type": "server_error"}})
QUOTA = Canned(
    status=429,
    body={
        "error": {
            "message": "You exceeded your current quota",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    },
)


def script(*replies: Canned) -> Callable[[Recorded], Canned]:
    """Replies in order; the last one repeats."""
    counter = itertools.count()

    def respond(_request: Recorded) -> Canned:
        return replies[min(next(counter), len(replies) - 1)]

    return respond


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def serve(*replies: Canned) -> ApiServer:
    return ApiServer(script(*replies))


def test_a_server_error_is_retried_with_one_idempotency_key(clock: FakeClock) -> None:
    with serve(BUSY, OK) as server:
        transport = RetryTransport(httpx.HTTPTransport(), policy=POLICY, clock=clock)
        with httpx.Client(transport=transport) as client:
            response = client.post(f"{server.url}/v1/x", json={"a": 1})
        assert response.json() == {"ok": True}
        keys = {r.headers["idempotency-key"] for r in server.seen()}
        assert len(server.seen()) == 2
        assert len(keys) == 1
        assert [r.json() for r in server.seen()] == [{"a": 1}, {"a": 1}]
    assert clock.sleeps == [1.0]


def test_retry_after_is_honoured(clock: FakeClock) -> None:
    limited = Canned(
        status=429, body={"error": {"message": "slow down"}}, headers={"retry-after": "7"}
    )
    with serve(limited, OK) as server:
        transport = RetryTransport(httpx.HTTPTransport(), policy=POLICY, clock=clock)
        with httpx.Client(transport=transport) as client:
            assert client.get(server.url).status_code == 200
    assert clock.sleeps == pytest.approx([7.0 + RETRY_AFTER_MARGIN_S])


def test_a_quota_429_is_not_retried_and_comes_back_readable(clock: FakeClock) -> None:
    with serve(QUOTA) as server:
        transport = RetryTransport(httpx.HTTPTransport(), policy=POLICY, clock=clock)
        with httpx.Client(transport=transport) as client:
            response = client.post(server.url, content=b"{}")
        assert response.status_code == 429
        assert response.json()["error"]["code"] == "insufficient_quota"
        assert len(server.seen()) == 1
    assert clock.sleeps == []


def test_the_last_failed_response_is_returned_when_attempts_run_out(clock: FakeClock) -> None:
    with serve(BUSY) as server:
        transport = RetryTransport(httpx.HTTPTransport(), policy=POLICY, clock=clock)
        with httpx.Client(transport=transport) as client:
            response = client.post(server.url, content=b"{}")
        assert (response.status_code, response.json()["error"]["message"]) == (503, "busy")
        assert len(server.seen()) == 3
    assert clock.sleeps == [1.0, 2.0]


def test_a_dropped_connection_is_retried(clock: FakeClock) -> None:
    with serve(Canned(drop=True), OK) as server:
        transport = RetryTransport(httpx.HTTPTransport(), policy=POLICY, clock=clock)
        with httpx.Client(transport=transport) as client:
            assert client.post(server.url, content=b"x").status_code == 200
        assert len(server.seen()) == 2


def test_a_body_that_cannot_be_replayed_is_sent_once(clock: FakeClock) -> None:
    def body() -> Iterator[bytes]:
        yield b"streamed"

    with serve(BUSY, OK) as server:
        transport = RetryTransport(httpx.HTTPTransport(), policy=POLICY, clock=clock)
        with httpx.Client(transport=transport) as client:
            response = client.post(server.url, content=body())
        assert response.status_code == 503
        assert len(server.seen()) == 1


def test_a_key_the_caller_set_is_kept(clock: FakeClock) -> None:
    with serve(BUSY, OK) as server:
        transport = RetryTransport(httpx.HTTPTransport(), policy=POLICY, clock=clock)
        with httpx.Client(transport=transport) as client:
            client.post(server.url, content=b"x", headers={"Idempotency-Key": "mine"})
        assert [r.headers["idempotency-key"] for r in server.seen()] == ["mine", "mine"]


def test_an_open_breaker_refuses_to_send(clock: FakeClock) -> None:
    breaker = CircuitBreaker(
        "api", clock=clock, failure_threshold=2, failure_rate_threshold=None, minimum_calls=1
    )
    once = POLICY.derive(max_attempts=1)
    with serve(BUSY) as server:
        transport = RetryTransport(httpx.HTTPTransport(), policy=once, breaker=breaker, clock=clock)
        with httpx.Client(transport=transport) as client:
            assert client.get(server.url).status_code == 503
            assert client.get(server.url).status_code == 503
            with pytest.raises(CircuitOpen):
                client.get(server.url)
        assert len(server.seen()) == 2


def test_an_unknown_policy_name_fails_at_construction() -> None:
    with pytest.raises(ConfigError):
        RetryTransport(httpx.HTTPTransport(), policy="no-such-policy")


def test_an_httpx2_client_takes_it_too(clock: FakeClock) -> None:
    with serve(BUSY, OK) as server:
        transport = RetryTransport(httpx2.HTTPTransport(), policy=POLICY, clock=clock)
        with httpx2.Client(transport=transport) as client:
            assert client.post(server.url, json={}).json() == {"ok": True}
        assert len(server.seen()) == 2


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_the_async_transport_retries_the_same_way(lib: Any, clock: FakeClock) -> None:
    async def go(url: str) -> Any:
        transport = AsyncRetryTransport(lib.AsyncHTTPTransport(), policy=POLICY, clock=clock)
        async with lib.AsyncClient(transport=transport) as client:
            return (await client.post(url, json={"a": 1})).json()

    with serve(Canned(drop=True), BUSY, OK) as server:
        assert asyncio.run(go(server.url)) == {"ok": True}
        assert len({r.headers["idempotency-key"] for r in server.seen()}) == 1
        assert len(server.seen()) == 3
    assert clock.sleeps == [1.0, 2.0]
