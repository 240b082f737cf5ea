"""``SQLiteOperationStore`` changes a row it read in place (``UPDATE``) rather than with
``INSERT OR REPLACE``: over random claims, renewals, completions, releases, revocations and
expiries, its answers and rows must be those of a store that always replaces the row."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from backstay.idempotency.records import Acquired, Lease, OperationRecord
from backstay.store.sqlite import operations
from backstay.store.sqlite.operations import SQLiteOperationStore
from backstay.testing import FakeClock


def _replace(conn: sqlite3.Connection, new: OperationRecord, *, found: bool) -> None:
    del found
    conn.execute(operations._UPSERT, operations._encode(new))


def _rows(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        query = "SELECT * FROM backstay_operations ORDER BY operation_id"
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def _run(store: SQLiteOperationStore, clock: FakeClock, seed: int) -> list[object]:
    draw = random.Random(seed)
    leases: list[Lease] = []
    answers: list[object] = []
    for _ in range(600):
        op = f"wf:t{draw.randrange(6)}:run"
        act = draw.randrange(6)
        if act == 0 or not leases:
            claim = store.claim(op, f"w{draw.randrange(3)}", draw.choice([0.5, 5.0]))
            if isinstance(claim, Acquired):
                leases.append(claim.lease)
            answers.append(type(claim).__name__)
        elif act == 1:
            answers.append(store.renew(draw.choice(leases)))
        elif act == 2:
            answers.append(store.complete(draw.choice(leases), {"n": draw.randrange(9)}))
        elif act == 3:
            answers.append(store.release(draw.choice(leases)))
        elif act == 4:
            answers.append(store.revoke(op))
        else:
            clock.advance(draw.choice([0.1, 1.0, 10.0]))
            answers.append(store.get(op))
    return answers


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_updating_in_place_keeps_the_rows_and_answers_of_replacing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    with SQLiteOperationStore(tmp_path / "a.sqlite", clock=(one := FakeClock())) as store:
        fast = _run(store, one, seed)
    monkeypatch.setattr(SQLiteOperationStore, "_write", staticmethod(_replace))
    with SQLiteOperationStore(tmp_path / "b.sqlite", clock=(two := FakeClock())) as store:
        slow = _run(store, two, seed)
    assert fast == slow
    assert _rows(tmp_path / "a.sqlite") == _rows(tmp_path / "b.sqlite")
    assert _rows(tmp_path / "a.sqlite")  # something was kept


def test_a_row_gone_meanwhile_is_inserted(tmp_path: Path) -> None:
    with SQLiteOperationStore(tmp_path / "a.sqlite") as store:
        claim = store.claim("wf:t:run", "w", 5.0)
        assert isinstance(claim, Acquired)
        row = _rows(tmp_path / "a.sqlite")[0]
        conn = store._conn
        conn.execute("DELETE FROM backstay_operations")
        record = operations._decode(row)
        assert record is not None
        store._write(conn, record, found=True)
        assert _rows(tmp_path / "a.sqlite") == [row]
