"""``PagedRegistration.register_page`` on SQLite, Redis and a Redis Cluster: each page of
a batch and its header in one transaction; the header says how many of the batch's tasks
are recorded until the last page removes it; a page sent again changes nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from tests.engine.support import WALL, spec

from backstay.engine import TaskState
from backstay.engine.records import StateChange
from backstay.engine.registration import PagedRegistration, Registration, ids_digest
from backstay.engine.task import TaskSpec
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.tasks import RedisTaskStore
from backstay.store.sqlite.tasks import SQLiteTaskStore

TOTAL: Final = 7


@pytest.fixture(params=["sqlite", "redis", "cluster"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PagedRegistration]:
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


def _specs(workspace: Path) -> list[TaskSpec]:
    return [spec(workspace, f"t{i}") for i in range(TOTAL)]


def _header(specs: list[TaskSpec], recorded: int) -> Registration:
    return Registration(
        total=len(specs),
        recorded=recorded,
        ids_sha256=ids_digest([s.operation_id for s in specs]),
        source='{"suite_file": "s.yaml"}',
        started_at=WALL,
    )


def test_the_header_counts_the_pages_in_until_the_last(
    store: PagedRegistration, tmp_path: Path
) -> None:
    specs = _specs(tmp_path)
    assert store.registration() is None
    assert store.register_page(specs[:3], at=WALL, header=_header(specs, 3)) == 3
    assert store.registration() == _header(specs, 3)
    assert [r.task_id for r in store.tasks()] == ["t0", "t1", "t2"]  # type: ignore[attr-defined]
    store.register_page(specs[3:6], at=WALL, header=_header(specs, 6))
    assert store.registration() == _header(specs, 6)
    store.register_page(specs[6:], at=WALL, header=_header(specs, 7))
    assert store.registration() is None
    records = store.tasks()  # type: ignore[attr-defined]
    assert [r.task_id for r in records] == [f"t{i}" for i in range(TOTAL)]
    assert store.state_counts()[TaskState.PENDING] == TOTAL  # type: ignore[attr-defined]


def test_a_page_sent_again_records_nothing_new_and_keeps_the_header(
    store: PagedRegistration, tmp_path: Path
) -> None:
    specs = _specs(tmp_path)
    store.register_page(specs[:3], at=WALL, header=_header(specs, 3))
    store.register_page(specs[3:6], at=WALL, header=_header(specs, 6))
    store.register_page(specs[3:6], at=WALL, header=_header(specs, 6))  # a late reply's
    assert store.registration() == _header(specs, 6)
    assert len(store.tasks()) == 6  # type: ignore[attr-defined]
    assert store.state_counts()[TaskState.PENDING] == 6  # type: ignore[attr-defined]


def test_a_later_page_never_moves_the_count_back(store: PagedRegistration, tmp_path: Path) -> None:
    specs = _specs(tmp_path)
    store.register_page(specs[:3], at=WALL, header=_header(specs, 3))
    store.register_page(specs[3:6], at=WALL, header=_header(specs, 6))
    store.register_page(specs[1:4], at=WALL, header=_header(specs, 4))
    assert store.registration() == _header(specs, 6)


def test_a_first_page_again_replaces_the_header_and_known_tasks_keep_their_state(
    store: PagedRegistration, tmp_path: Path
) -> None:
    specs = _specs(tmp_path)
    store.register_page(specs[:3], at=WALL, header=_header(specs, 3))
    store.change_state(  # type: ignore[attr-defined]
        specs[0].operation_id, StateChange(state=TaskState.CANCELLED, reason="by hand", at=WALL)
    )
    again = [dataclasses.replace(s, model="m2") for s in specs]
    store.register_page(again[:3], at=WALL, header=_header(again, 3))
    assert store.registration() == _header(again, 3)
    first = store.task(specs[0].operation_id)  # type: ignore[attr-defined]
    assert first.state is TaskState.CANCELLED
    assert first.spec.model == "m2"


def test_a_batch_of_one_page_leaves_no_header(store: PagedRegistration, tmp_path: Path) -> None:
    specs = _specs(tmp_path)
    store.register_page(specs, at=WALL, header=_header(specs, TOTAL))
    assert store.registration() is None
    assert len(store.tasks()) == TOTAL  # type: ignore[attr-defined]


def test_a_page_after_the_batch_finished_leaves_no_header(
    store: PagedRegistration, tmp_path: Path
) -> None:
    specs = _specs(tmp_path)
    store.register_page(specs[:3], at=WALL, header=_header(specs, 3))
    store.register_page(specs[3:], at=WALL, header=_header(specs, TOTAL))
    store.register_page(specs[3:6], at=WALL, header=_header(specs, 6))  # a late resend
    assert store.registration() is None
