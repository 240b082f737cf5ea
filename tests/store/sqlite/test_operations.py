"""SQLiteOperationStore: one file shared by stores, threads and processes; survives restarts."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from backstay.errors import ConfigError
from backstay.idempotency.records import Acquired, Busy, Claim, Done
from backstay.store.sqlite.breakers import SQLiteBreakerStore
from backstay.store.sqlite.operations import SCHEMA_VERSION, SQLiteOperationStore
from backstay.testing import FakeClock

OP = "wf:task:run"
THREADS = 8


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "operations.sqlite"


def test_it_is_a_shared_store(path: Path) -> None:
    with SQLiteOperationStore(path) as store:
        assert store.shared is True
        assert store.path == str(path)


def test_the_file_is_in_wal_mode(path: Path) -> None:
    SQLiteOperationStore(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_the_file_records_its_schema_version(path: Path) -> None:
    SQLiteOperationStore(path).close()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT component, version FROM backstay_schema").fetchall()
    assert rows == [("operations", SCHEMA_VERSION)]


def test_a_lease_taken_through_one_store_is_busy_for_another(path: Path) -> None:
    with SQLiteOperationStore(path) as one, SQLiteOperationStore(path) as two:
        assert isinstance(one.claim(OP, "w1", 10.0), Acquired)
        assert isinstance(two.claim(OP, "w2", 10.0), Busy)


def test_a_result_survives_closing_and_reopening_the_file(path: Path) -> None:
    clock = FakeClock()
    with SQLiteOperationStore(path, clock=clock) as before:
        claim = before.claim(OP, "w1", 10.0)
        assert isinstance(claim, Acquired)
        before.complete(claim.lease, {"n": 1})
    with SQLiteOperationStore(path, clock=clock) as after:
        again = after.claim(OP, "w2", 10.0)
    assert isinstance(again, Done)
    assert again.result.result == {"n": 1}


def test_a_generation_survives_reopening_so_fencing_does_too(path: Path) -> None:
    clock = FakeClock()
    with SQLiteOperationStore(path, clock=clock) as before:
        first = before.claim(OP, "w1", 10.0)
    assert isinstance(first, Acquired)
    clock.advance(10.0)
    with SQLiteOperationStore(path, clock=clock) as after:
        second = after.claim(OP, "w2", 10.0)
        assert isinstance(second, Acquired)
        assert second.lease.generation == 2
        assert after.complete(first.lease, {"late": True}) is None


def test_stores_in_threads_claiming_at_once_acquire_it_exactly_once(path: Path) -> None:
    SQLiteOperationStore(path).close()
    start = threading.Barrier(THREADS)
    claims: list[Claim] = []

    def claimant(index: int) -> None:
        with SQLiteOperationStore(path) as store:
            start.wait(timeout=10)
            claims.append(store.claim(OP, f"w{index}", 30.0))

    workers = [threading.Thread(target=claimant, args=(i,)) for i in range(THREADS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert len(claims) == THREADS
    assert sum(isinstance(c, Acquired) for c in claims) == 1


def test_a_transaction_that_fails_is_rolled_back(path: Path) -> None:
    with SQLiteOperationStore(path) as store:

        def explode(record: object, now: float) -> tuple[None, None]:
            raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            store._transaction(OP, explode)
        assert store._conn.in_transaction is False
        assert isinstance(store.claim(OP, "w1", 10.0), Acquired)


def test_a_negative_lock_timeout_is_refused(path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        SQLiteOperationStore(path, timeout_s=-1.0)
    assert info.value.where == "timeout_s"
    assert not path.exists()


def test_the_store_shares_a_file_with_the_breaker_store(path: Path) -> None:
    SQLiteBreakerStore(path).close()
    with SQLiteOperationStore(path) as store:
        assert isinstance(store.claim(OP, "w1", 10.0), Acquired)
    with SQLiteBreakerStore(path) as breakers:
        assert breakers.names() == []


def _traced(store: SQLiteOperationStore) -> list[str]:
    """The first word of each statement ``store`` runs from now on (``BEGIN`` with its kind)."""
    seen: list[str] = []

    def trace(statement: str) -> None:
        words = statement.split()
        seen.append(" ".join(words[:2]) if words[0] == "BEGIN" else words[0])

    store._conn.set_trace_callback(trace)
    return seen


def test_an_operation_s_first_claim_is_one_insert(path: Path) -> None:
    clock = FakeClock()
    with SQLiteOperationStore(path, clock=clock) as store:
        seen = _traced(store)
        claim = store.claim(OP, "w1", 10.0)
        assert seen == ["INSERT"]
    assert isinstance(claim, Acquired)
    assert claim.lease.generation == 1
    with SQLiteOperationStore(path, clock=clock) as other:
        record = other._load(OP)
    assert record is not None
    assert (record.generation, record.state.value, record.owner) == (1, "leased", "w1")
    assert record.lease_expires_at == pytest.approx(clock.now().timestamp() + 10.0)


def test_a_claim_of_an_operation_with_a_row_is_decided_from_the_row(path: Path) -> None:
    clock = FakeClock()
    with (
        SQLiteOperationStore(path, clock=clock) as one,
        SQLiteOperationStore(path, clock=clock) as two,
    ):
        first = one.claim(OP, "w1", 10.0)
        assert isinstance(first, Acquired)
        seen = _traced(two)
        assert isinstance(two.claim(OP, "w2", 10.0), Busy)  # the insert fails: the row is read
        assert seen == ["INSERT", "BEGIN IMMEDIATE", "SELECT", "COMMIT"]
        clock.advance(11.0)
        taken = two.claim(OP, "w2", 10.0)  # the lease ran out: taken over, fenced
        assert isinstance(taken, Acquired)
        assert taken.lease.generation == 2
        assert one.complete(first.lease, {"ok": 1}) is None  # the old holder is fenced off
        assert two.complete(taken.lease, {"ok": 2}) is not None
        assert isinstance(one.claim(OP, "w1", 10.0), Done)
