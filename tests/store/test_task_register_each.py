"""``TaskStore.register_each``, on SQLite, Redis and a Redis Cluster: a batch recorded in
one go from specs read a page at a time — every task in order, a known task keeping its
state, and nothing recorded (no staging left on Redis) when a spec is refused on the way.
(A runner killed with SIGKILL while it registers: tests/engine/test_register_kill.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from tests.engine.support import WALL, spec

from backstay.engine import TaskState
from backstay.engine.records import StateChange
from backstay.engine.taskstore import TaskStore
from backstay.errors import ConfigError
from backstay.store.location import StoreLocation
from backstay.store.redis import _register_pages
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.tasks import RedisTaskStore
from backstay.store.sqlite.tasks import SQLiteTaskStore

# More than two pages of ``_register_pages.PAGE``, the last one short.
TASKS: Final = 2 * _register_pages.PAGE + 7


@pytest.fixture(params=["sqlite", "redis", "cluster"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TaskStore]:
    if request.param == "sqlite":
        with SQLiteTaskStore(tmp_path / "state") as opened:
            yield opened
        return
    fixture = "redis_location" if request.param == "redis" else "cluster_location"
    location: StoreLocation = request.getfixturevalue(fixture)
    conn = RedisConnection(location)
    try:
        yield RedisTaskStore(conn)
    finally:
        conn.close()


def _specs(workspace: Path, n: int, **changes: Any) -> Iterator[Any]:
    return (spec(workspace, f"t{i:05d}", **changes) for i in range(n))


def _leftovers(store: TaskStore) -> list[Any]:
    """Keys of the store's namespace other than what a registered batch keeps."""
    if not isinstance(store, RedisTaskStore):
        return []
    conn: RedisConnection = store._conn  # the staging lists are private
    pattern = conn.key("tasks", "staging", "*")
    return list(conn.client.scan_iter(match=pattern, count=1000))


def test_every_task_is_recorded_pending_in_the_order_given(
    store: TaskStore, tmp_path: Path
) -> None:
    assert store.register_each(_specs(tmp_path, TASKS), at=WALL) == TASKS
    records = store.tasks()
    assert [r.task_id for r in records] == [f"t{i:05d}" for i in range(TASKS)]
    assert {r.state for r in records} == {TaskState.PENDING}
    assert store.state_counts()[TaskState.PENDING] == TASKS  # type: ignore[attr-defined]
    assert _leftovers(store) == []


def test_a_known_task_keeps_its_state_and_takes_the_new_spec(
    store: TaskStore, tmp_path: Path
) -> None:
    store.register_each(_specs(tmp_path, 3), at=WALL)
    store.change_state(
        "wf:t00001:run_01", StateChange(state=TaskState.CANCELLED, reason="by hand", at=WALL)
    )
    assert store.register_each(_specs(tmp_path, 4, model="m2"), at=WALL) == 4
    records = {r.task_id: r for r in store.tasks()}
    assert list(records) == ["t00000", "t00001", "t00002", "t00003"]
    assert records["t00001"].state is TaskState.CANCELLED
    assert {r.spec.model for r in records.values()} == {"m2"}
    counts = store.state_counts()  # type: ignore[attr-defined]
    assert (counts[TaskState.PENDING], counts[TaskState.CANCELLED]) == (3, 1)


def test_a_spec_refused_after_the_first_page_leaves_nothing_recorded(
    store: TaskStore, tmp_path: Path
) -> None:
    def batch() -> Iterator[Any]:
        yield from _specs(tmp_path, _register_pages.PAGE + 5)
        yield spec(tmp_path, "bad", config={"x": object()})  # not JSON data

    with pytest.raises(ConfigError, match="must be JSON data"):
        store.register_each(batch(), at=WALL)
    assert store.tasks() == ()
    assert store.state_counts()[TaskState.PENDING] == 0  # type: ignore[attr-defined]
    assert _leftovers(store) == []


def test_nothing_given_records_nothing(store: TaskStore) -> None:
    assert store.register_each(iter(()), at=WALL) == 0
    assert store.tasks() == ()
