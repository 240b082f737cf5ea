"""``read_health_facts`` and ``health_check`` on SQLite without the stores: the facts are
those the full stores read (open escalations, the circuit log, the running tasks' live
leases, the recording header), the report is the one the full stores make, and a file the
stores would change or refuse to read (a component missing or at another version, not in
WAL mode, a foreign table, a row they cannot decode) is left to them (``None``)."""

from __future__ import annotations

import datetime as _dt
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.store.summary_support import fill, specs

from backstay.clock import SYSTEM_CLOCK
from backstay.engine.circuit_log import CircuitChange, CircuitEntry
from backstay.engine.registration import Registration
from backstay.engine.states import TaskState
from backstay.engine.task_index import TaskFilter
from backstay.idempotency.owners import default_owner
from backstay.idempotency.records import OperationState
from backstay.observe import health
from backstay.observe.batch_view import BatchView
from backstay.observe.health import health_check, open_circuits
from backstay.store import _task_rows
from backstay.store.sqlite import circuit_log, health_reads, operations
from backstay.store.sqlite.circuit_log import SQLiteCircuitLog
from backstay.store.sqlite.health_reads import COMPONENTS, read_health_facts
from backstay.store.sqlite.operations import SQLiteOperationStore
from backstay.store.sqlite.tasks import STATE_FILE, SQLiteTaskStore
from backstay.testing import FakeClock

AT = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
RUNNING = TaskFilter(states=frozenset({TaskState.RUNNING}))


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    return child.pid


def _header(recorded: int) -> Registration:
    return Registration(
        total=10, recorded=recorded, ids_sha256="0" * 64, source="suite.yaml", started_at=AT
    )


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    """A batch of every state (``summary_support``) in ``tmp_path/batch`` whose running
    tasks are held by a live lease of this process (``gone-2``) and by the lease of a
    process that is gone (``gone-1``), more running tasks with an expired lease and with
    none, a circuit log of open, closed and half-open circuits, and a batch recorded in
    part (its header kept)."""
    state = tmp_path / "batch"
    with SQLiteTaskStore(state) as store:
        made = {spec.task_id: spec for spec in fill(store, tmp_path)}
        extra = {spec.task_id: spec for spec in specs(tmp_path, ["late-1", "none-1"])}
        store.register_page(list(extra.values()), at=AT, header=_header(2))
        for spec in extra.values():
            store.begin_attempt(
                spec.operation_id, number=1, attempt_id=f"{spec.task_id}:1", output_dir="d", at=AT
            )
    with SQLiteOperationStore(state / STATE_FILE) as ops:
        ops.claim(made["gone-2"].operation_id, default_owner(), 600.0)
        dead = f"{socket.gethostname()}:{_dead_pid()}:feedbeef"
        ops.claim(made["gone-1"].operation_id, dead, 600.0)
    # A lease stamped by a clock of January: long expired.
    with SQLiteOperationStore(state / STATE_FILE, clock=FakeClock()) as old:
        old.claim(extra["late-1"].operation_id, default_owner(), 600.0)
    with SQLiteCircuitLog(state) as log:
        for breaker, change in [
            ("a/one", CircuitChange.OPENED),
            ("b/two", CircuitChange.OPENED),
            ("b/two", CircuitChange.CLOSED),
            ("c/three", CircuitChange.OPENED),
            ("c/three", CircuitChange.HALF_OPENED),
            ("a/one", CircuitChange.WAITED),
        ]:
            log.add(CircuitEntry(breaker=breaker, change=change, at=AT, wait_s=None))
    return state


def _facts(state: Path) -> health_reads.HealthFacts | None:
    return read_health_facts(state / STATE_FILE, now=time.time())


def _untimed(report: health.HealthReport) -> dict[str, Any]:
    data = report.to_dict()
    for found in data["checks"].values():
        for check in found:
            check.pop("time", None)
    return data


def _full_report(state: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``health_check`` as the full stores make it (the light read answering ``None``)."""
    with monkeypatch.context() as patched:
        patched.setattr(health_reads, "read_health_facts", lambda *_a, **_k: None)
        return _untimed(health_check(state))


def test_the_versions_and_values_read_are_the_stores_own() -> None:
    assert COMPONENTS == {
        _task_rows.COMPONENT: _task_rows.SCHEMA_VERSION,
        operations._COMPONENT: operations.SCHEMA_VERSION,
        circuit_log.COMPONENT: circuit_log.SCHEMA_VERSION,
    }
    assert {str(s) for s in OperationState} == health_reads._OPERATION_STATES
    assert {str(c) for c in CircuitChange} == health_reads._CIRCUIT_CHANGES


def test_the_facts_are_those_the_full_stores_read(batch: Path) -> None:
    facts = _facts(batch)
    assert facts is not None
    with SQLiteTaskStore(batch) as tasks, SQLiteOperationStore(batch / STATE_FILE) as ops:
        with SQLiteCircuitLog(batch) as log:
            entries = log.entries()
        running = [r.operation_id for page in tasks.pages(RUNNING, size=100) for r in page]
        assert facts.open_escalations == tasks.open_escalation_count()
        assert dict(facts.running) == {op: ops.holder(op) for op in running}
        assert set(BatchView(tasks, ops).interrupted()) == {
            op for op, owner in facts.running if owner is None or owner.endswith("feedbeef")
        }
        header = tasks.registration()
    assert facts.circuit_changes == tuple((e.breaker, str(e.change)) for e in entries)
    assert open_circuits(entries) == {"a/one": "open", "c/three": "half-open"}
    assert header is not None
    assert facts.recording == (header.recorded, header.total) == (2, 10)
    assert len(facts.running) == 4
    assert sum(owner is None for _, owner in facts.running) == 2  # expired, none


def test_the_report_is_the_one_the_full_stores_make(
    batch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _facts(batch) is not None  # health_check reads it without the stores
    light = _untimed(health_check(batch))
    assert light == _full_report(batch, monkeypatch)
    assert light["checks"]["tasks:interrupted"][0]["observedValue"] == 3
    assert light["checks"]["tasks:recorded"][0]["observedValue"] == 2


def test_a_whole_batch_has_no_recording_header(tmp_path: Path) -> None:
    state = tmp_path / "whole"
    with SQLiteTaskStore(state) as store:
        fill(store, tmp_path)
    SQLiteOperationStore(state / STATE_FILE).close()
    SQLiteCircuitLog(state).close()
    facts = _facts(state)
    assert facts is not None
    assert facts.recording is None
    assert facts.circuit_changes == ()


def _sql(state: Path, *statements: str) -> None:
    conn = sqlite3.connect(state / STATE_FILE, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


LEFT = {
    "a newer tasks schema": ("UPDATE backstay_schema SET version = 99 WHERE component = 'tasks'",),
    "no operations component": (
        "DELETE FROM backstay_schema WHERE component = 'operations'",
        "DROP TABLE backstay_operations",
    ),
    "a foreign table": ("CREATE TABLE orders (id INTEGER)",),
    "not in WAL mode": ("PRAGMA journal_mode=DELETE",),
    "an unknown circuit change": (
        "INSERT INTO backstay_circuit_log (breaker, change, at, reason) "
        "VALUES ('x', 'exploded', 0, 'r')",
    ),
    "an unknown operation state": ("UPDATE backstay_operations SET state = 'odd'",),
    "a malformed header": ("UPDATE backstay_registration SET header = '{\"total\": 1}'",),
}


@pytest.mark.parametrize("statements", list(LEFT.values()), ids=list(LEFT))
def test_what_the_stores_would_change_or_refuse_is_left_to_them(
    batch: Path, statements: tuple[str, ...]
) -> None:
    assert _facts(batch) is not None
    _sql(batch, *statements)
    assert _facts(batch) is None


def test_a_file_left_to_the_stores_reads_as_before(
    batch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _sql(batch, "DELETE FROM backstay_schema WHERE component = 'circuits'",
         "DROP TABLE backstay_circuit_log")  # fmt: skip
    assert _facts(batch) is None
    report = _untimed(health_check(batch))  # the stores make the log again
    assert report == _full_report(batch, monkeypatch)
    assert _facts(batch) is not None


def test_a_lease_judged_at_the_time_given(batch: Path) -> None:
    live = SYSTEM_CLOCK.now().timestamp()
    held = read_health_facts(batch / STATE_FILE, now=live)
    later = read_health_facts(batch / STATE_FILE, now=live + 3600)
    assert held is not None
    assert later is not None
    assert sum(owner is not None for _, owner in held.running) == 2
    assert all(owner is None for _, owner in later.running)
