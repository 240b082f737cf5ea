"""The task stores' counts per state and their index (``backstay.engine.task_index``):
kept with every change, they agree with a full count on SQLite and on Redis, and a state
file or namespace written before they existed is given them when opened."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.store.summary_support import LATER, end_state, fill, full_count, task_ids

from backstay.engine import TaskState
from backstay.engine.records import StateChange
from backstay.engine.task_index import TaskFilter, TaskIndex
from backstay.engine.taskstore import TaskStore
from backstay.store import _task_rows as rows
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.tasks import RedisTaskStore
from backstay.store.sqlite.tasks import STATE_FILE, SQLiteTaskStore


class _Both(TaskStore, TaskIndex):  # type: ignore[misc]
    """What the tests read: a task store with its index."""


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[_Both]:
    if request.param == "redis":
        location: StoreLocation = request.getfixturevalue("redis_location")
        conn = RedisConnection(location)
        try:
            yield RedisTaskStore(conn)  # type: ignore[misc]
        finally:
            conn.close()
        return
    with SQLiteTaskStore(tmp_path / "state") as opened:
        yield opened  # type: ignore[misc]


def _ids(store: TaskIndex, where: TaskFilter, *, size: int = 3) -> list[str]:
    return [record.task_id for page in store.pages(where, size=size) for record in page]


def test_the_counts_agree_with_a_full_count_after_every_kind_of_move(
    store: _Both, tmp_path: Path
) -> None:
    fill(store, tmp_path)
    counts = store.state_counts()
    assert counts == full_count(store)
    assert counts[TaskState.RUNNING] == 2
    assert counts[TaskState.SUCCEEDED] == 6
    assert sum(counts.values()) == len(task_ids())


def test_a_recovered_task_moves_between_the_counts(store: _Both, tmp_path: Path) -> None:
    made = fill(store, tmp_path)
    gone = next(spec for spec in made if spec.task_id == "gone-1")
    store.recover_interrupted(gone.operation_id, at=LATER)
    counts = store.state_counts()
    assert (counts[TaskState.RUNNING], counts[TaskState.RETRYING]) == (1, 2)
    assert counts == full_count(store)


def test_a_refused_move_changes_no_count(store: _Both, tmp_path: Path) -> None:
    made = fill(store, tmp_path)
    done = next(spec for spec in made if spec.task_id == "ok-0")
    before = store.state_counts()
    with pytest.raises(Exception, match="cannot go from succeeded"):
        store.change_state(
            done.operation_id, StateChange(state=TaskState.FAILED, reason="no", at=LATER)
        )
    assert store.state_counts() == before == full_count(store)


def test_registering_a_known_task_again_counts_it_once(store: _Both, tmp_path: Path) -> None:
    made = fill(store, tmp_path)
    store.register_all(made[:3], at=LATER)
    assert store.state_counts() == full_count(store)


def test_pages_give_the_tasks_of_some_states_in_registration_order(
    store: _Both, tmp_path: Path
) -> None:
    fill(store, tmp_path)
    wanted = frozenset({TaskState.FAILED, TaskState.RUNNING, TaskState.PAUSED})
    found = _ids(store, TaskFilter(states=wanted))
    assert found == [t for t in task_ids() if end_state(t) in wanted]
    assert found == ["bad-1", "bad-2", "gone-1", "gone-2", "quota-1"]
    assert store.count(TaskFilter(states=wanted)) == 5


def test_pages_without_a_filter_give_every_task_a_page_at_a_time(
    store: _Both, tmp_path: Path
) -> None:
    fill(store, tmp_path)
    pages = list(store.pages(TaskFilter(), size=4))
    assert all(len(page) <= 4 for page in pages)
    assert [r.task_id for page in pages for r in page] == task_ids()


@pytest.mark.parametrize(
    ("glob", "expected"),
    [
        ("ok-*", [f"ok-{i}" for i in range(6)]),
        ("*-1", ["again-1", "bad-1", "gone-1", "human-1", "ok-1", "quota-1", "stop-1", "wait-1"]),
        ("ok-[0-2]", ["ok-0", "ok-1", "ok-2"]),
        ("ok-[!0-4]", ["ok-5"]),
        ("OK-*", []),
    ],
)
def test_a_task_pattern_matches_the_whole_task_id(
    store: _Both, tmp_path: Path, glob: str, expected: list[str]
) -> None:
    fill(store, tmp_path)
    assert _ids(store, TaskFilter(task_glob=glob)) == expected
    assert store.count(TaskFilter(task_glob=glob)) == len(expected)


def test_a_pattern_and_states_together(store: _Both, tmp_path: Path) -> None:
    fill(store, tmp_path)
    where = TaskFilter(states=frozenset({TaskState.RUNNING}), task_glob="*-2")
    assert _ids(store, where) == ["gone-2"]
    assert store.count(where) == 1


def test_attempts_of_some_tasks_and_open_escalations(store: _Both, tmp_path: Path) -> None:
    made = fill(store, tmp_path)
    ops = [spec.operation_id for spec in made if spec.task_id in ("bad-1", "ok-3", "wait-0")]
    attempts = store.attempts_of(ops)
    assert sorted(a.operation_id for a in attempts) == sorted(ops[:2])
    assert store.open_escalation_count() == 2  # the paused quota and the escalated task


def _as_schema_2(db: Path) -> None:
    """Take a state file back to task schema 2: no counts, no triggers, no state index."""
    conn = sqlite3.connect(db)
    for kind, name in conn.execute(
        "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'index') "
        "AND name LIKE 'backstay_tasks_%'"
    ).fetchall():
        conn.execute(f"DROP {kind} {name}")
    conn.execute(f"DROP TABLE {rows.COUNTS}")
    conn.execute("UPDATE backstay_schema SET version = 2 WHERE component = 'tasks'")
    conn.commit()
    conn.close()


def test_a_schema_2_state_file_is_given_its_counts_when_opened(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with SQLiteTaskStore(state) as store:
        made = fill(store, tmp_path)
    _as_schema_2(state / STATE_FILE)
    with SQLiteTaskStore(state) as store:
        assert store.state_counts() == full_count(store)
        gone = next(spec for spec in made if spec.task_id == "gone-2")
        store.recover_interrupted(gone.operation_id, at=LATER)  # the triggers count it
        assert store.state_counts() == full_count(store)
    conn = sqlite3.connect(state / STATE_FILE)
    (version,) = conn.execute("SELECT version FROM backstay_schema WHERE component = 'tasks'")
    conn.close()
    assert version == (rows.SCHEMA_VERSION,)


def test_a_namespace_written_before_the_index_is_indexed_when_opened(
    redis_location: StoreLocation, tmp_path: Path
) -> None:
    conn = RedisConnection(redis_location)
    try:
        made = fill(RedisTaskStore(conn), tmp_path)
        client = conn.client
        for key in client.scan_iter(f"{{{redis_location.namespace}:tasks}}:*"):
            name = key.decode()
            if name.endswith((":counts", ":index")) or ":in:" in name:
                client.delete(key)
            elif ":t:" in name:
                client.hdel(key, "seq")
        store = RedisTaskStore(conn)
        assert store.state_counts() == full_count(store)
        assert _ids(store, TaskFilter(states=frozenset({TaskState.RUNNING}))) == [
            "gone-1",
            "gone-2",
        ]
        gone = next(spec for spec in made if spec.task_id == "gone-1")
        store.recover_interrupted(gone.operation_id, at=LATER)
        assert store.state_counts() == full_count(store)
        assert _ids(store, TaskFilter(states=frozenset({TaskState.RUNNING}))) == ["gone-2"]
    finally:
        conn.close()
