"""SQLiteTaskStore beyond the shared contract (tests/store/test_task_store.py): records
kept across reopening and processes, the operation store in the same file, foreign or
damaged files refused and left as they were, batches registered at once."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.engine.support import WALL, spec
from tests.store.test_task_store import LATER, OP, S, _begin

from backstay.errors import ConfigError
from backstay.store import STATE_FILE, SQLiteTaskStore
from backstay.store import _task_rows as rows
from backstay.store.sqlite.operations import SQLiteOperationStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteTaskStore]:
    with SQLiteTaskStore(tmp_path / "state") as opened:
        opened.register(spec(tmp_path), at=WALL)
        yield opened


def test_records_survive_reopening_the_file(store: SQLiteTaskStore, tmp_path: Path) -> None:
    _begin(store)
    with SQLiteTaskStore(tmp_path / "state") as again:
        record = again.task(OP)
        assert record is not None
        assert (record.state, len(again.attempts(OP))) == (S.RUNNING, 1)


def test_the_operation_store_shares_the_state_file(tmp_path: Path) -> None:
    with SQLiteTaskStore(tmp_path) as tasks, SQLiteOperationStore(tasks.path):
        pass
    with sqlite3.connect(tmp_path / STATE_FILE) as conn:
        components = conn.execute("SELECT component FROM backstay_schema ORDER BY 1").fetchall()
    assert components == [("operations",), ("tasks",)]


def _refused(state_dir: Path, match: str) -> ConfigError:
    path = state_dir / STATE_FILE
    before = path.read_bytes()
    siblings = sorted(p.name for p in state_dir.iterdir())
    with pytest.raises(ConfigError, match=match) as info:
        SQLiteTaskStore(state_dir)
    assert path.read_bytes() == before
    assert sorted(p.name for p in state_dir.iterdir()) == siblings
    assert str(path) in str(info.value)
    return info.value


def test_a_corrupt_state_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_bytes(b"SQLite format 3\x00" + b"\x07" * 4000)
    _refused(tmp_path, "not a readable backstay store")


def test_another_applications_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / STATE_FILE) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER)")
    _refused(tmp_path, "not a backstay store")


def test_a_state_file_from_a_newer_backstay_is_refused_and_left_untouched(
    tmp_path: Path,
) -> None:
    SQLiteTaskStore(tmp_path).close()
    with sqlite3.connect(tmp_path / STATE_FILE) as conn:
        conn.execute("UPDATE backstay_schema SET version = 99 WHERE component = 'tasks'")
    conn.close()
    _refused(tmp_path, "newer backstay")


def test_register_all_records_a_batch_at_once_and_keeps_known_states(tmp_path: Path) -> None:
    with SQLiteTaskStore(tmp_path / "state") as store:
        store.register(spec(tmp_path, "t1"), at=WALL)
        store.begin_attempt(OP, number=1, attempt_id=f"{OP}:attempt_1", output_dir="d", at=WALL)
        batch = [spec(tmp_path, "t1", prompt="changed"), spec(tmp_path, "t2")]
        records = store.register_all(batch, at=LATER)
        assert [(r.task_id, r.state, r.spec.prompt) for r in records] == [
            ("t1", S.RUNNING, "changed"),
            ("t2", S.PENDING, "do the task"),
        ]
        assert [r.task_id for r in store.tasks()] == ["t1", "t2"]


def test_a_refused_batch_registers_none_of_its_tasks(tmp_path: Path) -> None:
    with SQLiteTaskStore(tmp_path / "state") as store:
        batch = [spec(tmp_path, "t1"), spec(tmp_path, "t2", config={"x": object()})]
        with pytest.raises(ConfigError, match="t2"):
            store.register_all(batch, at=WALL)
        assert store.tasks() == ()


def test_a_stored_spec_is_decoded_once_however_often_it_is_read(tmp_path: Path) -> None:
    decode = rows.spec_decoder({})
    with SQLiteTaskStore(tmp_path / "state") as store:
        store.register(spec(tmp_path), at=WALL)
        text = sqlite3.connect(store.path).execute("SELECT spec_json FROM backstay_tasks")
        stored = text.fetchone()[0]
    first, _ = decode(stored)
    again, _ = decode(stored)
    assert first is again
    assert first == spec(tmp_path)
