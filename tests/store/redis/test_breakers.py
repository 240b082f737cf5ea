"""Breakers and cooldowns shared through a store: the same behaviour from the SQLite
file and from Redis, and on Redis from several processes at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from tests.breaker.support import SERVER
from tests.redis_server import RedisServer

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.record import CircuitState
from backstay.breaker.settings import BreakerSettings
from backstay.breaker.store import BreakerStore
from backstay.errors import CircuitOpen
from backstay.fallback.store import FallbackStore
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.breakers import RedisBreakerStore, RedisFallbackStore
from backstay.store.sqlite.breakers import SQLiteBreakerStore
from backstay.store.sqlite.fallback import SQLiteFallbackStore
from backstay.testing import FakeClock

SETTINGS = BreakerSettings(failure_threshold=2, failure_rate_threshold=None, open_duration_s=10.0)
Opener = Callable[[], BreakerStore]
FallbackOpener = Callable[[], FallbackStore]


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def open_store(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens stores on one shared backing (one file, or one Redis namespace)."""
    with ExitStack() as stack:
        if backend == "sqlite":
            path = tmp_path / "state.sqlite"
            yield lambda: stack.enter_context(SQLiteBreakerStore(path))
            return
        location: StoreLocation = request.getfixturevalue("redis_location")

        def opener() -> BreakerStore:
            conn = RedisConnection(location)
            stack.callback(conn.close)
            return RedisBreakerStore(conn)

        yield opener


@pytest.fixture
def open_fallback(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[FallbackOpener]:
    with ExitStack() as stack:
        if backend == "sqlite":
            path = tmp_path / "state.sqlite"
            yield lambda: stack.enter_context(SQLiteFallbackStore(path))
            return
        location: StoreLocation = request.getfixturevalue("redis_location")

        def opener() -> FallbackStore:
            conn = RedisConnection(location)
            stack.callback(conn.close)
            return RedisFallbackStore(conn)

        yield opener


def _breaker(store: BreakerStore, clock: FakeClock) -> CircuitBreaker:
    return CircuitBreaker("anthropic/claude", settings=SETTINGS, store=store, clock=clock)


def test_it_is_a_shared_breaker_store(open_store: Opener) -> None:
    store = open_store()
    assert isinstance(store, BreakerStore)
    assert store.shared is True


def test_consecutive_failures_through_two_stores_trip_one_circuit(open_store: Opener) -> None:
    clock = FakeClock()
    first, second = _breaker(open_store(), clock), _breaker(open_store(), clock)
    first.acquire().failure(SERVER)
    second.acquire().failure(SERVER)
    assert first.state is CircuitState.OPEN
    with pytest.raises(CircuitOpen):
        second.acquire()


def test_a_failure_rate_counted_from_two_stores_trips_the_circuit(open_store: Opener) -> None:
    settings = BreakerSettings(
        failure_threshold=None,
        failure_rate_threshold=0.5,
        minimum_calls=4,
        window_calls=4,
        open_duration_s=10.0,
    )
    clock = FakeClock()
    one = CircuitBreaker("p/m", settings=settings, store=open_store(), clock=clock)
    two = CircuitBreaker("p/m", settings=settings, store=open_store(), clock=clock)
    one.acquire().success()
    two.acquire().failure(SERVER)
    one.acquire().success()
    assert two.state is CircuitState.CLOSED
    two.acquire().failure(SERVER)
    assert one.state is CircuitState.OPEN


def test_a_probe_taken_through_one_store_is_taken_for_the_other(open_store: Opener) -> None:
    clock = FakeClock()
    first, second = _breaker(open_store(), clock), _breaker(open_store(), clock)
    first.acquire().failure(SERVER)
    first.acquire().failure(SERVER)
    clock.advance(10.0)
    probe = first.acquire()
    with pytest.raises(CircuitOpen):
        second.acquire()
    probe.success()
    assert second.state is CircuitState.CLOSED


def test_a_probe_that_never_reports_is_given_again_after_its_lease(open_store: Opener) -> None:
    settings = SETTINGS.derive(probe_timeout_s=5.0)
    clock = FakeClock()
    first = CircuitBreaker("p/m", settings=settings, store=open_store(), clock=clock)
    second = CircuitBreaker("p/m", settings=settings, store=open_store(), clock=clock)
    first.acquire().failure(SERVER)
    first.acquire().failure(SERVER)
    clock.advance(10.0)
    first.acquire()  # its holder dies: never reported
    with pytest.raises(CircuitOpen):
        second.acquire()
    clock.advance(5.0)
    second.acquire().success()
    assert first.state is CircuitState.CLOSED


def test_names_lists_the_breakers_with_a_record(open_store: Opener) -> None:
    store = open_store()
    clock = FakeClock()
    _breaker(store, clock).acquire().failure(SERVER)
    assert store.names() == ["anthropic/claude"]


def test_a_cooldown_is_seen_by_another_store(open_fallback: FallbackOpener) -> None:
    one, two = open_fallback(), open_fallback()
    one.cool_down("a/m", until_s=2000.0, reason="rate_limit")
    assert two.cooling_until("a/m", now_s=1000.0) == 2000.0
    assert two.cooling_until("a/m", now_s=2000.0) is None


def test_the_later_cooldown_wins(open_fallback: FallbackOpener) -> None:
    store = open_fallback()
    store.cool_down("a/m", until_s=2000.0, reason="first")
    store.cool_down("a/m", until_s=1500.0, reason="shorter")
    assert store.cooling_until("a/m", now_s=0.0) == 2000.0
    store.cool_down("a/m", until_s=3000.0, reason="longer")
    assert store.cooling_until("a/m", now_s=0.0) == 3000.0


def test_a_candidate_circuit_is_shared_by_fallback_stores(open_fallback: FallbackOpener) -> None:
    clock = FakeClock()
    one = CircuitBreaker("p/m", settings=SETTINGS, store=open_fallback().breakers, clock=clock)
    two = CircuitBreaker("p/m", settings=SETTINGS, store=open_fallback().breakers, clock=clock)
    one.acquire().failure(SERVER)
    one.acquire().failure(SERVER)
    assert two.state is CircuitState.OPEN


_CHILD = textwrap.dedent(
    """
    import sys
    from backstay.breaker import BreakerSettings, CircuitBreaker
    from backstay.errors import CircuitOpen
    from backstay.store.location import parse_store
    from backstay.store.redis._client import RedisConnection
    from backstay.store.redis.breakers import RedisBreakerStore

    settings = BreakerSettings(
        failure_threshold=1, failure_rate_threshold=None, open_duration_s=0.0,
        half_open_max_probes=1, success_threshold=1,
    )
    conn = RedisConnection(parse_store(sys.argv[1]))
    breaker = CircuitBreaker("op", settings=settings, store=RedisBreakerStore(conn))
    got = 0
    for _ in range(int(sys.argv[2])):
        try:
            breaker.acquire()  # held: never reported, as if the probe were still running
            got += 1
        except CircuitOpen:
            pass
    conn.close()
    print(got)
    """
)


def test_processes_sharing_redis_send_exactly_one_half_open_probe(
    redis_server: RedisServer, redis_location: StoreLocation
) -> None:
    url = f"{redis_server.url}?namespace={redis_location.namespace}"
    conn = RedisConnection(redis_location)
    settings = SETTINGS.derive(failure_threshold=1, open_duration_s=0.0)
    CircuitBreaker("op", settings=settings, store=RedisBreakerStore(conn)).acquire().failure(SERVER)
    conn.close()
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, url, "60"], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    admitted = [int(child.communicate(timeout=60)[0]) for child in children]
    assert sum(admitted) == 1
