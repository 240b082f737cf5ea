"""What a breaker on Redis sends, seen by the server (``MONITOR``): one ``GET`` a call on a
healthy circuit (its success is decided from the record read when it was admitted), one
compare-and-set script a change; a change made elsewhere in between is decided again from
the stored record, and a record's text is parsed once."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis
from tests.breaker.support import SERVER
from tests.redis_server import RedisServer

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.record import BreakerRecord, CircuitState
from backstay.breaker.settings import BreakerSettings
from backstay.breaker.state import Step
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.breakers import RedisBreakerStore

NAME = "anthropic/claude"
SETTINGS = BreakerSettings(failure_threshold=3, failure_rate_threshold=None, open_duration_s=10.0)
MONITOR_TIMEOUT_S = 10.0
MAX_LINES = 1_000


@pytest.fixture
def conn(redis_location: StoreLocation) -> Iterator[RedisConnection]:
    connection = RedisConnection(redis_location)
    try:
        yield connection
    finally:
        connection.close()


def _count_up(record: BreakerRecord) -> Step:
    return Step(record=record._replace(consecutive=record.consecutive + 1))


def sent(server: RedisServer, conn: RedisConnection, action: Callable[[], object]) -> list[str]:
    """The commands clients sent while ``action`` ran (not those a script ran), by name."""
    conn.execute("PING")  # connected before: its handshake is not the action's
    marker = uuid.uuid4().hex
    seen: list[str] = []
    ready, done = threading.Event(), threading.Event()

    def watch() -> None:
        client = redis.Redis(port=server.port, socket_timeout=MONITOR_TIMEOUT_S)
        try:
            with client.monitor() as monitor:
                ready.set()
                for _ in range(MAX_LINES):
                    line = monitor.next_command()
                    if marker in line["command"]:
                        break
                    if line["client_type"] != "lua":
                        seen.append(line["command"].split(" ", 1)[0].upper())
        finally:
            client.close()
            done.set()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    assert ready.wait(MONITOR_TIMEOUT_S)
    conn.execute("PING")  # MONITOR is on once a command after it shows
    action()
    conn.execute("ECHO", marker)
    assert done.wait(MONITOR_TIMEOUT_S)
    thread.join(MONITOR_TIMEOUT_S)
    return [name for name in seen if name != "PING"]


def test_a_call_on_a_healthy_circuit_costs_one_read(
    redis_server: RedisServer, conn: RedisConnection
) -> None:
    breaker = CircuitBreaker(NAME, settings=SETTINGS, store=RedisBreakerStore(conn))
    breaker.acquire().failure(SERVER)
    breaker.acquire().success()  # counts: the failure is forgotten
    assert sent(redis_server, conn, lambda: breaker.acquire().success()) == ["GET"]
    assert breaker.snapshot().consecutive_failures == 0


def test_a_change_is_one_compare_and_set_script(
    redis_server: RedisServer, conn: RedisConnection
) -> None:
    breaker = CircuitBreaker(NAME, settings=SETTINGS, store=RedisBreakerStore(conn))
    assert sent(redis_server, conn, lambda: breaker.acquire().failure(SERVER)) == [
        "GET",
        "EVALSHA",
    ]
    assert breaker.snapshot().consecutive_failures == 1


def test_a_success_after_failures_resets_them_in_one_round_trip(
    redis_server: RedisServer, conn: RedisConnection
) -> None:
    breaker = CircuitBreaker(NAME, settings=SETTINGS, store=RedisBreakerStore(conn))
    breaker.acquire().failure(SERVER)
    breaker.acquire().failure(SERVER)
    assert sent(redis_server, conn, lambda: breaker.acquire().success()) == ["GET", "EVALSHA"]
    breaker.acquire().failure(SERVER)
    breaker.acquire().failure(SERVER)
    assert breaker.state is CircuitState.CLOSED  # two after the reset, not four


def test_a_change_made_elsewhere_meanwhile_is_decided_again_from_it(
    redis_location: StoreLocation, conn: RedisConnection
) -> None:
    here = RedisBreakerStore(conn)
    other_conn = RedisConnection(redis_location)
    try:
        elsewhere = RedisBreakerStore(other_conn)
        here.transition(NAME, _count_up)
        elsewhere.transition(NAME, _count_up)  # here still holds consecutive == 1
        seen: list[int] = []

        def counted(record: BreakerRecord) -> Step:
            seen.append(record.consecutive)
            return _count_up(record)

        step = here.transition(NAME, counted)
        assert seen == [1, 2]
        assert step.record.consecutive == 3
        loaded = elsewhere.load(NAME)
        assert loaded is not None
        assert loaded.consecutive == 3
    finally:
        other_conn.close()


def test_a_breaker_opened_elsewhere_refuses_the_next_call_here(
    redis_location: StoreLocation, conn: RedisConnection
) -> None:
    here = CircuitBreaker(NAME, settings=SETTINGS, store=RedisBreakerStore(conn))
    here.acquire().success()  # admitted under the closed record
    other_conn = RedisConnection(redis_location)
    try:
        there = CircuitBreaker(NAME, settings=SETTINGS, store=RedisBreakerStore(other_conn))
        for _ in range(3):
            there.acquire().failure(SERVER)
    finally:
        other_conn.close()
    assert here.state is CircuitState.OPEN
    with pytest.raises(Exception, match="circuit"):
        here.acquire()


def test_an_unchanged_record_is_parsed_once(
    redis_location: StoreLocation, conn: RedisConnection
) -> None:
    store = RedisBreakerStore(conn)
    store.transition(NAME, _count_up)
    first, second = store.load(NAME), store.load(NAME)
    assert first is not None
    assert first is second
    other_conn = RedisConnection(redis_location)
    try:
        RedisBreakerStore(other_conn).transition(NAME, _count_up)
    finally:
        other_conn.close()
    after = store.load(NAME)
    assert after is not None
    assert after.consecutive == 2
