"""``read_health_facts`` and ``health_check`` on Redis without redis-py: on a real
``redis-server``, the facts are those the full stores read (counts, open escalations, the
circuit log, the running tasks' live leases), the report is the one the full stores make,
and what it cannot read (no index yet, no batch, no server) goes as before."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.redis_server import free_port
from tests.store.summary_support import fill, specs

from backstay.engine.circuit_log import CircuitChange, CircuitEntry
from backstay.errors import ConfigError
from backstay.idempotency.owners import default_owner
from backstay.observe.batch_view import BatchView
from backstay.observe.health import health_check, open_circuits
from backstay.store.location import StoreLocation, StoreUnavailable, parse_store
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.circuit_log import RedisCircuitLog
from backstay.store.redis.health_reads import read_health_facts
from backstay.store.redis.operations import RedisOperationStore
from backstay.store.redis.tasks import RedisTaskStore
from backstay.testing import FakeClock

AT = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    return child.pid


@pytest.fixture
def batch(redis_location: StoreLocation, tmp_path: Path) -> Iterator[RedisConnection]:
    """A batch of every state (``summary_support``) whose running tasks are held by a live
    lease of this process (``gone-2``) and by the lease of a process that is gone
    (``gone-1``), more running tasks with an expired lease and with none, and a circuit log
    of open, closed and half-open circuits."""
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
        # A lease stamped by a clock of January: long expired by Redis's.
        RedisOperationStore(conn, clock=FakeClock()).claim(
            extra["late-1"].operation_id, default_owner(), 600.0
        )
        log = RedisCircuitLog(conn)
        for breaker, change in [
            ("a/one", CircuitChange.OPENED),
            ("b/two", CircuitChange.OPENED),
            ("b/two", CircuitChange.CLOSED),
            ("c/three", CircuitChange.OPENED),
            ("c/three", CircuitChange.HALF_OPENED),
            ("a/one", CircuitChange.WAITED),
        ]:
            log.add(CircuitEntry(breaker=breaker, change=change, at=AT, wait_s=None))
        yield conn
    finally:
        conn.close()


def test_the_facts_are_those_the_full_stores_read(batch: RedisConnection) -> None:
    facts = read_health_facts(batch.location)
    assert facts is not None
    store = RedisTaskStore(batch)
    stored = {str(state): n for state, n in store.state_counts().items() if n}
    assert dict(facts.state_counts) == stored
    assert facts.open_escalations == store.open_escalation_count() == 2
    entries = RedisCircuitLog(batch).entries()
    assert facts.circuit_changes == tuple((e.breaker, str(e.change)) for e in entries)
    operations = RedisOperationStore(batch)
    running = {op: operations.holder(op) for op, _ in facts.running}
    assert dict(facts.running) == running
    assert len(running) == 4
    assert sorted(owner is None for owner in running.values()) == [False, False, True, True]
    gone = BatchView(store, operations).interrupted()
    assert len(gone) == 3  # the dead holder, the expired lease, no lease
    assert open_circuits(entries) == {"a/one": "open", "c/three": "half-open"}


def _without_times(report: Any) -> dict[str, Any]:
    data: dict[str, Any] = report.to_dict()
    for found in data["checks"].values():
        for check in found:
            check.pop("time", None)
    return data


def test_the_report_is_the_one_the_full_stores_make(batch: RedisConnection, tmp_path: Path) -> None:
    light = health_check(tmp_path, location=batch.location)
    # In wait mode the full stores (redis-py) read the batch.
    full_location = dataclasses.replace(batch.location, unavailable=StoreUnavailable.WAIT)
    full = health_check(tmp_path, location=full_location)
    assert _without_times(light) == _without_times(full)
    (interrupted,) = light.checks["tasks:interrupted"]
    assert interrupted["observedValue"] == 3
    assert [c["componentId"] for c in light.checks["circuits:open"]] == ["a/one", "c/three"]


def test_a_namespace_not_indexed_yet_is_left_to_the_full_stores(
    redis_location: StoreLocation, tmp_path: Path
) -> None:
    assert read_health_facts(redis_location) is None  # nothing there, no index either
    with pytest.raises(ConfigError, match="holds no batch"):
        health_check(tmp_path, location=redis_location)
    # The full stores indexed the empty namespace: it is read without them now, and is
    # still no batch.
    assert read_health_facts(redis_location) is not None
    with pytest.raises(ConfigError, match="holds no batch"):
        health_check(tmp_path, location=redis_location)


def test_tls_and_cluster_locations_are_left_to_the_full_stores() -> None:
    assert read_health_facts(parse_store("rediss://127.0.0.1:1/0")) is None
    assert read_health_facts(parse_store("redis://127.0.0.1:1/0?cluster=yes")) is None


def test_no_server_is_a_config_error_naming_the_store_not_its_password(tmp_path: Path) -> None:
    canary = "pw-canary-5e2a"
    location = parse_store(f"redis://:{canary}@127.0.0.1:{free_port()}/0?namespace=x")
    with pytest.raises(ConfigError) as caught:
        health_check(tmp_path, location=location)
    assert "cannot reach Redis at redis://:***@127.0.0.1" in str(caught.value)
    assert canary not in str(caught.value)
