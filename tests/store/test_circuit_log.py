"""The ``CircuitLog`` contract over every backend: SQLite and Redis (there is no memory
one). ``open_log`` opens logs on one backing (one state directory, one Redis namespace)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from backstay.engine.circuit_log import CircuitChange, CircuitEntry, CircuitLog
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.circuit_log import RedisCircuitLog
from backstay.store.sqlite.circuit_log import SQLiteCircuitLog

Opener = Callable[[], CircuitLog]
AT = _dt.datetime(2026, 1, 2, 3, 4, 5, 250_000, tzinfo=_dt.UTC)


@pytest.fixture(params=["sqlite", "redis"])
def open_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    with ExitStack() as stack:
        if request.param == "sqlite":
            yield lambda: stack.enter_context(_Closing(SQLiteCircuitLog(tmp_path)))
            return
        location: StoreLocation = request.getfixturevalue("redis_location")

        def opener() -> CircuitLog:
            conn = RedisConnection(location)
            stack.callback(conn.close)
            return RedisCircuitLog(conn)

        yield opener


class _Closing:
    def __init__(self, log: SQLiteCircuitLog) -> None:
        self.log = log

    def __enter__(self) -> SQLiteCircuitLog:
        return self.log

    def __exit__(self, *exc: object) -> None:
        self.log.close()


def _entry(change: CircuitChange, operation_id: str | None, **kw: object) -> CircuitEntry:
    return CircuitEntry(breaker="p/m", change=change, at=AT, operation_id=operation_id, **kw)  # type: ignore[arg-type]


def test_it_is_a_circuit_log_and_starts_empty(open_log: Opener) -> None:
    log = open_log()
    assert isinstance(log, CircuitLog)
    assert log.entries() == ()


def test_entries_read_back_whole_in_the_order_written(open_log: Opener) -> None:
    log = open_log()
    written = (
        _entry(CircuitChange.OPENED, "w:t1:a-run_01", reason="server_error"),
        _entry(CircuitChange.WAITED, "w:t2:a-run_01", wait_s=2.5),
        _entry(CircuitChange.HALF_OPENED, None),
        _entry(CircuitChange.CLOSED, "w:t2:a-run_01"),
    )
    for entry in written:
        log.add(entry)
    assert log.entries() == written


def test_entries_of_some_operations_leave_the_others_out(open_log: Opener) -> None:
    log = open_log()
    for op in ("a", "b", None, "a"):
        log.add(_entry(CircuitChange.WAITED, op, wait_s=1.0))
    assert [e.operation_id for e in log.entries(["a"])] == ["a", "a"]
    assert log.entries([]) == ()


def test_another_log_on_the_same_backing_reads_what_one_wrote(open_log: Opener) -> None:
    open_log().add(_entry(CircuitChange.OPENED, "op"))
    assert [e.change for e in open_log().entries()] == [CircuitChange.OPENED]
