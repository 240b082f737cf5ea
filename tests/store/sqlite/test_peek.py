"""``peek``: what a SQLite file holds, read without creating, initialising or changing it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from backstay.store.sqlite._peek import peek
from backstay.store.sqlite.operations import SQLiteOperationStore


def _side_files(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


def test_a_missing_file_is_none_and_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    assert peek(path) is None
    assert not path.exists()


def test_an_empty_file_stays_empty(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    path.write_bytes(b"")
    found = peek(path)
    assert found is not None
    assert (found.size, found.tasks, found.components) == (0, 0, frozenset())
    assert path.stat().st_size == 0
    assert _side_files(path) == []


def test_components_and_tasks_by_workflow_are_read_and_the_file_left_as_it_is(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.sqlite"
    SQLiteOperationStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE backstay_tasks (workflow_id TEXT)")
        conn.executemany("INSERT INTO backstay_tasks VALUES (?)", [("w1",), ("w1",), ("w2",)])
    conn.close()
    before = path.read_bytes()
    found = peek(path)
    assert found is not None
    assert found.components == {"operations"}
    assert dict(found.workflows) == {"w1": 2, "w2": 1}
    assert found.tasks == 3
    assert path.read_bytes() == before
    assert _side_files(path) == []


def test_tasks_still_in_the_wal_file_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("CREATE TABLE backstay_tasks (workflow_id TEXT)")
        writer.execute("INSERT INTO backstay_tasks VALUES ('w')")
        assert (tmp_path / "state.sqlite-wal").stat().st_size > 0
        found = peek(path)
    finally:
        writer.close()
    assert found is not None
    assert dict(found.workflows) == {"w": 1}


def test_a_file_that_is_not_a_database_raises(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        peek(path)
