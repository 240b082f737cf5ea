"""``RespReads`` (``status_reads``) on a real ``redis-server``: each read gives what the full
stores (redis-py) give on the same batch — counts, pages of every selection, attempts,
open escalations, the recording header, live leases, the settings' warnings — and what it
cannot read (no index yet, TLS, cluster, wait mode, no server) goes as before."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.redis_server import free_port
from tests.store.summary_support import fill, specs

from backstay.engine.registration import Registration, ids_digest
from backstay.engine.states import TaskState
from backstay.engine.task_index import TaskFilter
from backstay.errors import ConfigError
from backstay.idempotency.owners import default_owner
from backstay.observe.batch_view import BatchView, Selection
from backstay.store.location import StoreLocation, StoreUnavailable, parse_store
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.operations import RedisOperationStore
from backstay.store.redis.settings import check_server
from backstay.store.redis.status_reads import RespReads, open_status_reads
from backstay.store.redis.tasks import RedisTaskStore

AT = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
FILTERS = [
    TaskFilter(),
    TaskFilter(states=frozenset({TaskState.FAILED})),
    TaskFilter(states=frozenset({TaskState.RUNNING, TaskState.PAUSED, TaskState.ESCALATED})),
    TaskFilter(states=frozenset({TaskState.CANCELLED})),
    TaskFilter(task_glob="ok-*"),
    TaskFilter(states=frozenset({TaskState.SUCCEEDED, TaskState.PENDING}), task_glob="*-1"),
    TaskFilter(task_glob="nothing-*"),
]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    return child.pid


@pytest.fixture
def batch(redis_location: StoreLocation, tmp_path: Path) -> Iterator[RedisConnection]:
    """A batch of every state whose running tasks are held by a live lease, by a lease of
    a process that is gone, by an expired lease and by none."""
    conn = RedisConnection(redis_location)
    try:
        store = RedisTaskStore(conn)
        made = {spec.task_id: spec for spec in fill(store, tmp_path)}
        extra = {spec.task_id: spec for spec in specs(tmp_path, ["late-1", "none-1"])}
        store.register_all(list(extra.values()), at=AT)
        for spec in extra.values():
            store.begin_attempt(spec.operation_id, number=1, attempt_id="a1", output_dir="d", at=AT)
        operations = RedisOperationStore(conn)
        operations.claim(made["gone-2"].operation_id, default_owner(), 600.0)
        dead = f"{socket.gethostname()}:{_dead_pid()}:feedbeef"
        operations.claim(made["gone-1"].operation_id, dead, 600.0)
        yield conn
    finally:
        conn.close()


@pytest.fixture
def reads(batch: RedisConnection) -> Iterator[RespReads]:
    found = open_status_reads(batch.location)
    assert found is not None
    try:
        yield found
    finally:
        found.close()


def test_counts_and_escalations_are_the_full_stores(
    batch: RedisConnection, reads: RespReads
) -> None:
    store = RedisTaskStore(batch)
    assert reads.state_counts() == store.state_counts()
    assert reads.open_escalation_count() == store.open_escalation_count() > 0


def _filter_id(where: TaskFilter) -> str:
    """A test id the same in every process (a frozenset's order is not: xdist's workers
    must collect the same ids)."""
    states = "any" if where.states is None else "+".join(sorted(s.value for s in where.states))
    return f"{states}-{where.task_glob or 'all'}"


@pytest.mark.parametrize("where", FILTERS, ids=_filter_id)
@pytest.mark.parametrize("size", [1, 3, 500])
def test_every_selection_reads_the_same_pages_and_count(
    batch: RedisConnection, reads: RespReads, where: TaskFilter, size: int
) -> None:
    store = RedisTaskStore(batch)
    assert list(reads.pages(where, size=size)) == list(store.pages(where, size=size))
    assert reads.count(where) == store.count(where)


def test_attempts_are_the_full_stores(batch: RedisConnection, reads: RespReads) -> None:
    store = RedisTaskStore(batch)
    ops = [record.operation_id for record in store.tasks()]
    assert reads.attempts_of(ops) == store.attempts_of(ops)
    assert len(reads.attempts_of(ops)) > 5
    assert reads.attempts_of([]) == ()


def test_leases_and_the_interrupted_tasks_are_the_full_stores(
    batch: RedisConnection, reads: RespReads
) -> None:
    store, operations = RedisTaskStore(batch), RedisOperationStore(batch)
    running = [r.operation_id for r in store.tasks() if r.state is TaskState.RUNNING]
    assert [reads.holder(op) for op in running] == [operations.holder(op) for op in running]
    assert BatchView(reads, reads).interrupted() == BatchView(store, operations).interrupted()
    assert len(BatchView(reads, reads).interrupted()) == len(running) - 1  # one live lease
    chosen = Selection(states=frozenset({"interrupted"}))
    assert BatchView(reads, reads).first(chosen, 2) == BatchView(store, operations).first(chosen, 2)


def test_the_recording_header_is_the_full_stores(
    batch: RedisConnection, reads: RespReads, tmp_path: Path
) -> None:
    store = RedisTaskStore(batch)
    assert reads.registration() is None is store.registration()
    more = specs(tmp_path, ["page-1", "page-2", "page-3"])
    header = Registration(
        total=3,
        recorded=1,
        ids_sha256=ids_digest([s.operation_id for s in more]),
        source='{"suite_file": "s.yaml"}',
        started_at=AT,
    )
    store.register_page(more[:1], at=AT, header=header)
    assert reads.registration() == store.registration() == header


def test_the_settings_warnings_are_the_full_stores(
    batch: RedisConnection, reads: RespReads
) -> None:
    assert reads.warnings == check_server(batch)
    assert any("appendonly" in warning for warning in reads.warnings)  # the test server's


def test_a_namespace_not_indexed_yet_is_left_to_the_full_stores(
    redis_location: StoreLocation,
) -> None:
    assert open_status_reads(redis_location) is None
    conn = RedisConnection(redis_location)
    try:
        RedisTaskStore(conn)  # indexes the namespace
    finally:
        conn.close()
    found = open_status_reads(redis_location)
    assert found is not None
    found.close()


def test_tls_cluster_and_wait_locations_are_left_to_the_full_stores(
    redis_location: StoreLocation,
) -> None:
    assert open_status_reads(parse_store("rediss://127.0.0.1:1/0")) is None
    assert open_status_reads(parse_store("redis://127.0.0.1:1/0?cluster=yes")) is None
    waiting = dataclasses.replace(redis_location, unavailable=StoreUnavailable.WAIT)
    assert open_status_reads(waiting) is None


def test_no_server_is_a_config_error_naming_the_store_not_its_password() -> None:
    canary = "pw-canary-7c1d"
    location = parse_store(f"redis://:{canary}@127.0.0.1:{free_port()}/0?namespace=x")
    with pytest.raises(ConfigError) as caught:
        open_status_reads(location)
    assert "cannot reach Redis" in str(caught.value)
    assert canary not in str(caught.value)
