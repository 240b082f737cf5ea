"""A gateway request's first reservation at a Redis limiter is awaited (``prepared``):
while redis-server does not answer (stopped by SIGSTOP), the gateway's loop goes on
serving other work; once it answers, the retry driver gets that reservation without a
second round trip, and the fleet's bucket counts it once. A limiter in the process is
not asked ahead. What an answer's rate-limit headers teach is awaited the same way."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Iterator
from typing import Final

import pytest
from tests.redis_server import RedisServer, start_redis

from backstay.gateway.limits import GatewayLimits
from backstay.gateway.routes import Route
from backstay.policy.ratelimit import RateLimitSettings
from backstay.store.location import parse_store
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.limiter import RedisRateLimiterRegistry

ROUTE: Final = Route(provider="openai", model="gpt-5", endpoint="/v1/chat/completions")
BODY: Final = json.dumps({"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]})
STEPS: Final = 20
WAIT_S: Final = 30.0


@pytest.fixture
def server() -> Iterator[RedisServer]:
    """A redis-server of its own: this test stops and resumes it."""
    started = start_redis()
    try:
        yield started
    finally:
        started.process.send_signal(signal.SIGCONT)
        started.stop()


def test_the_first_reservation_is_awaited_while_the_loop_serves_others(
    server: RedisServer,
) -> None:
    conn = RedisConnection(parse_store(f"{server.url}?namespace=paced"))
    settings = RateLimitSettings(requests_per_minute=600)
    registry = RedisRateLimiterRegistry(conn, {"openai/gpt-5": settings})
    limits = GatewayLimits(registry)
    limiter = registry.limiter_for("openai", "gpt-5")
    conn.execute("PING")  # connected before the server stops

    async def main() -> tuple[int, bool]:
        server.process.send_signal(signal.SIGSTOP)
        try:
            preparing = asyncio.ensure_future(
                limits.prepared(ROUTE, "POST", BODY.encode(), parsed=json.loads(BODY))
            )
            steps = 0
            for _ in range(STEPS):  # the loop runs other work meanwhile
                await asyncio.sleep(0.01)
                steps += 1
            pending = not preparing.done()
        finally:
            server.process.send_signal(signal.SIGCONT)
        pacer = await asyncio.wait_for(preparing, WAIT_S)
        assert pacer is not None
        reservation = pacer.reservation()
        assert reservation.wait_s == 0.0
        return steps, pending

    try:
        steps, pending = asyncio.run(main())
        assert steps == STEPS
        assert pending  # it could not have finished with the server stopped
        assert limiter.state()["n"] == 1.0  # one reservation: the prepared one, handed over
    finally:
        conn.close()


def test_an_answers_headers_are_learned_while_the_loop_serves_others(
    server: RedisServer,
) -> None:
    conn = RedisConnection(parse_store(f"{server.url}?namespace=learned"))
    registry = RedisRateLimiterRegistry(conn)
    limits = GatewayLimits(registry)
    limiter = registry.limiter_for("openai", "gpt-5")
    headers = [
        ("x-ratelimit-limit-requests", "600"),
        ("x-ratelimit-remaining-requests", "599"),
        ("x-ratelimit-limit-tokens", "90000"),
        ("x-ratelimit-remaining-tokens", "89000"),
        ("content-type", "application/json"),
    ]
    pacer = limits.pacer(ROUTE, "POST", BODY.encode(), parsed=json.loads(BODY))
    assert pacer is not None
    conn.execute("PING")

    async def main() -> tuple[int, bool]:
        server.process.send_signal(signal.SIGSTOP)
        try:
            learning = asyncio.ensure_future(pacer.aanswered(headers, refused=False))
            steps = 0
            for _ in range(STEPS):
                await asyncio.sleep(0.01)
                steps += 1
            pending = not learning.done()
        finally:
            server.process.send_signal(signal.SIGCONT)
        await asyncio.wait_for(learning, WAIT_S)
        return steps, pending

    try:
        steps, pending = asyncio.run(main())
        assert (steps, pending) == (STEPS, True)
        state = limiter.state()
        assert state["r_cap"] > 0.0  # both dimensions learned
        assert state["t_cap"] > 0.0
    finally:
        conn.close()


def test_a_limiter_in_the_process_is_not_asked_ahead() -> None:
    limits = GatewayLimits()

    async def main() -> object:
        pacer = await limits.prepared(ROUTE, "POST", BODY.encode(), parsed=json.loads(BODY))
        assert pacer is not None
        return pacer._ready

    assert asyncio.run(main()) is None
