"""SQLiteBreakerStore decides a transition from a plain read first: one that keeps the
record as it is takes no write lock (another process holding it does not hold it up),
and one that changes it is decided again under the lock."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from backstay.breaker.record import CLOSED_RECORD, BreakerRecord
from backstay.breaker.state import Step
from backstay.store.sqlite.breakers import SQLiteBreakerStore

NAME = "anthropic/claude"


def _keep(record: BreakerRecord) -> Step:
    return Step(record=record)


def _count_up(record: BreakerRecord) -> Step:
    return Step(record=record._replace(consecutive=record.consecutive + 1))


def _writer_holding_the_lock(path: Path) -> sqlite3.Connection:
    other = sqlite3.connect(path, isolation_level=None, timeout=0.0)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_a_transition_that_keeps_the_record_takes_no_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "breakers.sqlite"
    with SQLiteBreakerStore(path, timeout_s=0.05) as store:
        store.transition(NAME, _count_up)
        other = _writer_holding_the_lock(path)
        try:
            step = store.transition(NAME, _keep)  # would wait for the lock, then fail
            assert step.record.consecutive == 1
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                store.transition(NAME, _count_up)  # a change waits for the lock
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert store.transition(NAME, _count_up).record.consecutive == 2
        loaded = store.load(NAME)
        assert loaded is not None
        assert loaded.consecutive == 2


def test_a_change_is_decided_again_from_the_record_under_the_lock(tmp_path: Path) -> None:
    """Another process changes the record between the plain read and the lock: the
    change is made from the record it wrote, not from the one read first."""
    path = tmp_path / "breakers.sqlite"
    seen: list[int] = []
    with SQLiteBreakerStore(path) as store, SQLiteBreakerStore(path) as elsewhere:
        store.transition(NAME, _count_up)

        def racing(record: BreakerRecord) -> Step:
            seen.append(record.consecutive)
            if len(seen) == 1:  # between the plain read and the lock
                elsewhere.transition(NAME, _count_up)
            return _count_up(record)

        step = store.transition(NAME, racing)
    assert seen == [1, 2]
    assert step.record.consecutive == 3


def test_no_record_reads_as_closed_and_writes_nothing_when_kept(tmp_path: Path) -> None:
    with SQLiteBreakerStore(tmp_path / "breakers.sqlite") as store:
        assert store.transition(NAME, _keep).record is CLOSED_RECORD
        assert store.names() == []
