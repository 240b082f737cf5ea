"""``health_check``: whether a batch's state directory is ready, in the shape of the IETF
draft *Health Check Response Format for HTTP APIs* (``application/health+json``).

Three checks, each ``pass``, ``warn`` or ``fail``:

* ``store:writable``: the state directory, ``state.sqlite`` and its ``-wal`` and ``-shm``
  files can be written (not on a read-only file system, write permission, space left on
  the device) and ``state.sqlite`` takes a write transaction (``fail`` if not). The
  transaction alone is not enough: SQLite grants one in WAL mode without writing;
* ``circuits:open``: one entry per circuit that is open or half-open (``warn``);
* ``escalations:open``: failures waiting for a human (``warn`` when any);
* ``tasks:interrupted``: tasks stored ``running`` that no live process holds (``warn``
  when any: ``backstay resume`` continues them); only ``health_check`` makes it.

``health_check`` reads the store's counters and index (``BatchView``) and the circuit
log, never every task, so it costs the same at any batch size. A SQLite file whose
components are all current, and a plain ``redis://`` store, are read without opening the
stores (``store.sqlite.health_reads``, ``store.redis.health_reads``: the same facts).
The overall status is the worst of them. ``fail`` is served with HTTP 503, ``pass`` and
``warn`` with 200.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from backstay.clock import SYSTEM_CLOCK
from backstay.errors import ConfigError
from backstay.store.location import StoreKind, StoreLocation

# The stores and what reads them are imported by the checks that use them: a command that
# only names this module (``backstay health --help``, ``serve``'s options) pays for none.
if TYPE_CHECKING:
    from backstay.engine.circuit_log import CircuitEntry, CircuitLog
    from backstay.observe.batch_view import LeaseHolders
    from backstay.observe.snapshot import StateSnapshot
    from backstay.store.redis.health_reads import HealthFacts as RedisHealthFacts
    from backstay.store.sqlite.health_reads import HealthFacts as SQLiteHealthFacts

    _HealthFacts = RedisHealthFacts | SQLiteHealthFacts

__all__ = [
    "HEALTH_CONTENT_TYPE",
    "HealthReport",
    "check_writable",
    "file_system_fault",
    "health_check",
    "health_of",
    "liveness",
    "open_circuits",
]

HEALTH_CONTENT_TYPE: Final = "application/health+json"
# ``backstay.store.sqlite.tasks.STATE_FILE`` (tests/cli/test_startup.py holds them alike).
STATE_FILE: Final = "state.sqlite"
PASS: Final = "pass"  # noqa: S105 - a health status, not a password
WARN: Final = "warn"
FAIL: Final = "fail"
_RANK: Final = {PASS: 0, WARN: 1, FAIL: 2}
# How long the write check waits for a batch's own write to finish.
_WRITE_TIMEOUT_S: Final = 2.0
# A circuit's state by its last change of state (``prometheus.CIRCUIT_STATES``' changes):
# the shown name, ``None`` for closed. A task's wait (``waited``) changes no state.
_CIRCUIT_NAMES: Final = {"half_opened": "half-open", "opened": "open", "closed": None}
# SQLite's companions of a WAL-mode file, written by every transaction.
_SIDE_FILES: Final = ("-wal", "-shm")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HealthReport:
    """``status`` (pass, warn, fail) and the ``checks`` it came from."""

    status: str
    checks: Mapping[str, tuple[Mapping[str, Any], ...]]
    description: str = "backstay batch"

    @property
    def http_status(self) -> int:
        return 503 if self.status == FAIL else 200

    def to_dict(self) -> dict[str, Any]:
        from backstay._version import __version__  # noqa: PLC0415 - read from the metadata

        return {
            "status": self.status,
            "version": __version__,
            "description": self.description,
            "checks": {name: [dict(c) for c in found] for name, found in self.checks.items()},
        }


def file_system_fault(state_dir: Path) -> str | None:
    """Why the file system would refuse writes to ``state_dir``'s store (read-only, no
    space left, no permission), or ``None``."""
    path = state_dir / STATE_FILE
    try:
        found = os.statvfs(state_dir)
    except OSError as exc:
        return f"cannot look at {state_dir}: {exc.strerror or exc}"
    if found.f_flag & os.ST_RDONLY:
        return f"{state_dir} is on a read-only file system"
    if found.f_bavail == 0:
        return f"no space left on the device of {state_dir}"
    files = [state_dir, path] + [
        Path(f"{path}{suffix}") for suffix in _SIDE_FILES if Path(f"{path}{suffix}").exists()
    ]
    for file in files:
        if not os.access(file, os.W_OK):
            return f"{file} is not writable (permission denied)"
    return None


def check_writable(state_dir: Path) -> dict[str, Any]:
    """``store:writable``: ``pass`` when ``state_dir``'s store can take writes."""
    path = state_dir / STATE_FILE
    fault = file_system_fault(state_dir)
    if fault is not None:
        return {"status": FAIL, "output": f"{path} takes no write: {fault}"}
    try:
        conn = sqlite3.connect(path, timeout=_WRITE_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        return {"status": FAIL, "output": f"cannot open {path}: {exc}"}
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
    except sqlite3.Error as exc:
        return {"status": FAIL, "output": f"{path} takes no write: {exc}"}
    finally:
        conn.close()
    return {"status": PASS, "componentId": str(path)}


def health_of(snap: StateSnapshot, *, store: Mapping[str, Any] | None = None) -> HealthReport:
    """The report of ``snap`` (``store``: the result of the write check, if made)."""
    from backstay.engine.records import EscalationStatus  # noqa: PLC0415 - see the imports

    waiting = sum(1 for e in snap.escalations if e.status is EscalationStatus.OPEN)
    return _report(snap.taken_at, open_circuits(snap.circuits), waiting, store=store)


def open_circuits(entries: Iterable[CircuitEntry]) -> dict[str, str]:
    """The circuits not closed by their last change in ``entries`` (the circuit log, in
    order): name → ``open`` or ``half-open``, as ``prometheus.circuit_states`` finds them
    (that module, a batch's metrics, is not imported for it)."""
    return _open_of((entry.breaker, str(entry.change)) for entry in entries)


def _open_of(changes: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``open_circuits`` of the log's (breaker, change) pairs, in order."""
    last = {breaker: change for breaker, change in changes if change in _CIRCUIT_NAMES}
    return {name: shown for name, change in last.items() if (shown := _CIRCUIT_NAMES[change])}


def _report(
    taken_at: _dt.datetime,
    found_open: Mapping[str, str],
    waiting: int,
    *,
    store: Mapping[str, Any] | None = None,
    interrupted: int | None = None,
    recording: tuple[int, int] | None = None,
) -> HealthReport:
    at = taken_at.isoformat()
    checks: dict[str, tuple[Mapping[str, Any], ...]] = {}
    if store is not None:
        checks["store:writable"] = ({**store, "time": at},)
    circuits = [
        {"componentId": name, "status": WARN, "observedValue": shown, "time": at}
        for name, shown in sorted(found_open.items())
    ]
    checks["circuits:open"] = tuple(circuits) or (
        {"status": PASS, "observedValue": 0, "observedUnit": "circuits", "time": at},
    )
    checks["escalations:open"] = (
        {
            "status": WARN if waiting else PASS,
            "observedValue": waiting,
            "observedUnit": "escalations",
            "time": at,
        },
    )
    if interrupted is not None:
        checks["tasks:interrupted"] = (
            {
                "status": WARN if interrupted else PASS,
                "observedValue": interrupted,
                "observedUnit": "tasks",
                "time": at,
                **({"output": "no process runs them: backstay resume"} if interrupted else {}),
            },
        )
    if recording is not None:  # a batch recorded a page at a time, not wholly yet
        recorded, total = recording
        checks["tasks:recorded"] = (
            {
                "status": WARN,
                "observedValue": recorded,
                "observedUnit": "tasks",
                "time": at,
                "output": f"{recorded} of the batch's {total} tasks recorded: its runner is "
                "still recording them, or stopped (backstay resume records the rest)",
            },
        )
    worst = max((c["status"] for found in checks.values() for c in found), key=_RANK.__getitem__)
    return HealthReport(status=worst, checks=checks)


def health_check(
    state_dir: str | os.PathLike[str], *, location: StoreLocation | None = None
) -> HealthReport:
    """The readiness of the batch in ``state_dir`` (its state in ``location``, default
    SQLite there): its store takes writes (SQLite), which circuits are open, how many
    escalations wait and how many tasks were interrupted. ``ConfigError`` when it holds
    no batch."""
    folder = Path(state_dir)
    shared = location is not None and location.kind is StoreKind.REDIS
    store_dir = folder if location is None or location.path is None else Path(location.path)
    if not shared and not (store_dir / STATE_FILE).is_file():
        what = "does not exist" if not store_dir.exists() else f"holds no {STATE_FILE}"
        raise ConfigError(f"{store_dir} {what}: no batch ran there", where="--state-dir")
    where = location or StoreLocation(kind=StoreKind.SQLITE, path=store_dir)
    writable = None if shared else check_writable(store_dir)
    taken_at = SYSTEM_CLOCK.now()
    if shared:
        report = _shared_report(where, taken_at)
    else:
        report = _sqlite_report(store_dir, taken_at, writable)
    if report is not None:
        return report
    from backstay.engine.task_index import TaskIndex  # noqa: PLC0415 - see the imports
    from backstay.observe.batch_view import BatchView  # noqa: PLC0415

    tasks, operations, circuit_log, close = _open(where, folder, store_dir, shared=shared)
    try:
        if not isinstance(tasks, TaskIndex):
            raise ConfigError("this store keeps no task index", where="--store")
        view = BatchView(tasks, operations)
        if shared and not sum(tasks.state_counts().values()):
            raise _no_batch(where)
        return _report(
            taken_at,
            open_circuits(circuit_log.entries()),
            tasks.open_escalation_count(),
            store=writable,
            interrupted=len(view.interrupted()),
            recording=_recording(tasks),
        )
    finally:
        close()


def _open(
    where: StoreLocation, folder: Path, store_dir: Path, *, shared: bool
) -> tuple[object, LeaseHolders, CircuitLog, Callable[[], None]]:
    """The task store, operation store and circuit log the check reads, and how to close
    them: on SQLite those three alone (not the spend ledger, breakers and fallback stores
    of a whole ``StoreBundle``), on one connection as ``open_sqlite_stores`` shares it."""
    if shared:
        from backstay.store.open import open_stores  # noqa: PLC0415 - see the imports

        stores = open_stores(where, state_dir=folder, secrets={})
        return stores.tasks, stores.operations, stores.circuit_log, stores.close
    from backstay.store.sqlite.circuit_log import SQLiteCircuitLog  # noqa: PLC0415
    from backstay.store.sqlite.operations import SQLiteOperationStore  # noqa: PLC0415
    from backstay.store.sqlite.tasks import SQLiteTaskStore  # noqa: PLC0415

    with contextlib.ExitStack() as opened:
        tasks = opened.enter_context(SQLiteTaskStore(store_dir, secrets={}))
        operations = opened.enter_context(SQLiteOperationStore(tasks.path, clock=SYSTEM_CLOCK))
        circuit_log = opened.enter_context(SQLiteCircuitLog(store_dir))
        opened.pop_all()
    operations.adopt(tasks)
    circuit_log.adopt(tasks)
    return tasks, operations, circuit_log, tasks.close


def _shared_report(where: StoreLocation, taken_at: _dt.datetime) -> HealthReport | None:
    """The report of a batch in Redis read without redis-py (``health_reads``), or
    ``None`` where the full stores must read it."""
    from backstay.store.redis.health_reads import read_health_facts  # noqa: PLC0415

    facts = read_health_facts(where)
    if facts is None:
        return None
    if not sum(facts.state_counts.values()):
        raise _no_batch(where)
    return _facts_report(facts, taken_at)


def _sqlite_report(
    store_dir: Path, taken_at: _dt.datetime, writable: Mapping[str, Any] | None
) -> HealthReport | None:
    """The report of a batch in SQLite read without its stores (``health_reads``; leases
    judged as ``SQLiteOperationStore.holder`` judges them, by the clock now), or ``None``
    where the stores must read it."""
    from backstay.store.sqlite.health_reads import read_health_facts  # noqa: PLC0415

    facts = read_health_facts(store_dir / STATE_FILE, now=SYSTEM_CLOCK.now().timestamp())
    if facts is None:
        return None
    return _facts_report(facts, taken_at, writable)


def _facts_report(
    facts: _HealthFacts, taken_at: _dt.datetime, store: Mapping[str, Any] | None = None
) -> HealthReport:
    """The report of the facts a light read of a store gave (``health_reads``): a running
    task without a live lease, or whose holder is a dead process, was interrupted."""
    from backstay.idempotency.owners import holder_is_dead  # noqa: PLC0415 - see the imports

    gone = sum(1 for _, owner in facts.running if owner is None or holder_is_dead(owner))
    return _report(
        taken_at,
        _open_of(facts.circuit_changes),
        facts.open_escalations,
        store=store,
        interrupted=gone,
        recording=facts.recording,
    )


def _recording(tasks: object) -> tuple[int, int] | None:
    """(recorded, total) of a batch still being recorded a page at a time."""
    from backstay.engine.registration import PagedRegistration  # noqa: PLC0415 - see the imports

    header = tasks.registration() if isinstance(tasks, PagedRegistration) else None
    return None if header is None else (header.recorded, header.total)


def _no_batch(where: StoreLocation) -> ConfigError:
    return ConfigError(
        f"{where.display} holds no batch (namespace {where.namespace!r})", where="--store"
    )


def liveness() -> HealthReport:
    """The process serves: ``pass``, no checks."""
    return HealthReport(status=PASS, checks={})
