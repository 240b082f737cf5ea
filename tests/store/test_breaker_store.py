"""The ``BreakerStore`` contract, one behaviour per test, over every backend: in memory,
SQLite and Redis. ``open_store`` opens stores on one backing (the one memory store, one
file, one Redis namespace), so what one store writes the others read."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from tests.breaker.support import SERVER

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.memory import MemoryBreakerStore
from backstay.breaker.record import CLOSED_RECORD, BreakerRecord, CircuitState
from backstay.breaker.settings import BreakerSettings
from backstay.breaker.state import Step
from backstay.breaker.store import BreakerStore
from backstay.errors import CircuitOpen
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.breakers import RedisBreakerStore
from backstay.store.sqlite.breakers import SQLiteBreakerStore
from backstay.testing import FakeClock

SETTINGS = BreakerSettings(failure_threshold=2, failure_rate_threshold=None, open_duration_s=10.0)
Opener = Callable[[], BreakerStore]


@pytest.fixture(params=["memory", "sqlite", "redis"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def open_store(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    with ExitStack() as stack:
        if backend == "memory":
            shared = MemoryBreakerStore()
            yield lambda: shared
            return
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


def _breaker(store: BreakerStore, clock: FakeClock) -> CircuitBreaker:
    return CircuitBreaker("anthropic/claude", settings=SETTINGS, store=store, clock=clock)


def test_it_is_a_breaker_store_shared_unless_in_memory(open_store: Opener, backend: str) -> None:
    store = open_store()
    assert isinstance(store, BreakerStore)
    assert store.shared is (backend != "memory")


def test_an_unknown_name_has_no_record(open_store: Opener) -> None:
    assert open_store().load("op") is None


def test_a_transition_starts_from_a_closed_record_and_keeps_the_result(open_store: Opener) -> None:
    store = open_store()
    seen: list[BreakerRecord] = []

    def fn(record: BreakerRecord) -> Step:
        seen.append(record)
        return Step(record._replace(state=CircuitState.OPEN))

    store.transition("op", fn)
    assert seen[0] == CLOSED_RECORD
    loaded = store.load("op")
    assert loaded is not None
    assert loaded.state is CircuitState.OPEN


def test_a_transition_that_changes_nothing_writes_nothing(open_store: Opener) -> None:
    store = open_store()
    store.transition("op", Step)
    assert store.load("op") is None
    assert store.names() == []


def test_a_transition_that_raises_writes_nothing(open_store: Opener) -> None:
    store = open_store()

    def broken(record: BreakerRecord) -> Step:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        store.transition("op", broken)
    assert store.load("op") is None
    store.transition("op", lambda r: Step(r._replace(epoch=3)))
    assert store.names() == ["op"]


def test_names_lists_the_records_sorted(open_store: Opener) -> None:
    store = open_store()
    for name in ("b", "a"):
        store.transition(name, lambda r: Step(r._replace(epoch=1)))
    assert store.names() == ["a", "b"]


def test_names_lists_the_breakers_with_a_record(open_store: Opener) -> None:
    store = open_store()
    _breaker(store, FakeClock()).acquire().failure(SERVER)
    assert store.names() == ["anthropic/claude"]


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
