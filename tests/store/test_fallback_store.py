"""The ``FallbackStore`` contract over every backend: in memory, SQLite and Redis.
``open_fallback`` opens stores on one backing (the one memory store, one file, one Redis
namespace)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from tests.breaker.support import SERVER

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.record import CircuitState
from backstay.breaker.settings import BreakerSettings
from backstay.breaker.store import BreakerStore
from backstay.fallback.store import FallbackStore, MemoryFallbackStore
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.breakers import RedisFallbackStore
from backstay.store.sqlite.fallback import SQLiteFallbackStore
from backstay.testing import FakeClock

SETTINGS = BreakerSettings(failure_threshold=2, failure_rate_threshold=None, open_duration_s=10.0)
Opener = Callable[[], FallbackStore]


@pytest.fixture(params=["memory", "sqlite", "redis"])
def open_fallback(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    with ExitStack() as stack:
        if request.param == "memory":
            shared = MemoryFallbackStore()
            yield lambda: shared
            return
        if request.param == "sqlite":
            path = tmp_path / "state.sqlite"
            yield lambda: stack.enter_context(SQLiteFallbackStore(path))
            return
        location: StoreLocation = request.getfixturevalue("redis_location")

        def opener() -> FallbackStore:
            conn = RedisConnection(location)
            stack.callback(conn.close)
            return RedisFallbackStore(conn)

        yield opener


def test_it_is_a_fallback_store_with_a_breaker_store(open_fallback: Opener) -> None:
    store = open_fallback()
    assert isinstance(store, FallbackStore)
    assert isinstance(store.breakers, BreakerStore)


def test_a_name_never_cooled_down_is_not_cooling(open_fallback: Opener) -> None:
    assert open_fallback().cooling_until("a/m", now_s=0.0) is None


def test_a_cooldown_is_seen_by_another_store(open_fallback: Opener) -> None:
    one, two = open_fallback(), open_fallback()
    one.cool_down("a/m", until_s=2000.0, reason="rate_limit")
    assert two.cooling_until("a/m", now_s=1000.0) == 2000.0
    assert two.cooling_until("a/m", now_s=2000.0) is None


def test_the_later_cooldown_wins(open_fallback: Opener) -> None:
    store = open_fallback()
    store.cool_down("a/m", until_s=2000.0, reason="first")
    store.cool_down("a/m", until_s=1500.0, reason="shorter")
    assert store.cooling_until("a/m", now_s=0.0) == 2000.0
    store.cool_down("a/m", until_s=3000.0, reason="longer")
    assert store.cooling_until("a/m", now_s=0.0) == 3000.0


def test_a_candidate_circuit_is_shared_by_fallback_stores(open_fallback: Opener) -> None:
    clock = FakeClock()
    one = CircuitBreaker("p/m", settings=SETTINGS, store=open_fallback().breakers, clock=clock)
    two = CircuitBreaker("p/m", settings=SETTINGS, store=open_fallback().breakers, clock=clock)
    one.acquire().failure(SERVER)
    one.acquire().failure(SERVER)
    assert two.state is CircuitState.OPEN
