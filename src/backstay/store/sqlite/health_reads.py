"""What ``backstay health`` reads of a batch's ``state.sqlite``, without its stores.

``read_health_facts`` reads, in one read transaction of a plain ``sqlite3`` connection, the
rows the full stores would read for the check (``observe.health``): the open
escalations, the circuit log as (breaker, change), each task stored running with the owner
of its live lease (``SQLiteOperationStore.holder``'s rule: ``leased`` and expiring after
now), and the header of a batch still being recorded a page at a time. It imports none of
the stores' modules (the task store alone loads the engine's records, its spec codec and
the adapters' contract: about 0.05 s of CPU), decodes no task's spec (as the Redis reads
do not), and writes nothing.

It answers ``None`` wherever opening the stores would do more than read, or could end
otherwise: a component missing or at another schema version (the stores would create or
migrate it), a file not in WAL mode (they would switch it), tables of another application,
or a row the stores would refuse to decode (an unknown circuit change or operation state,
a malformed header); and for any ``sqlite3`` error. The stores are then opened as before,
and say what is wrong in their own words. ``tests/store/sqlite/test_health_reads.py``
holds the facts and the report against the full stores'.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import sqlite3
from pathlib import Path
from typing import Any, Final

__all__ = ["COMPONENTS", "HealthFacts", "read_health_facts"]

# The components of the file and the schema version each store reads (``_task_rows``,
# ``operations``, ``circuit_log``; tests/store/sqlite/test_health_reads.py holds them alike).
COMPONENTS: Final = {"tasks": 3, "operations": 1, "circuits": 1}
# As the stores open a file (``_schema``, ``tasks.DEFAULT_TIMEOUT_S``).
_TIMEOUT_S: Final = 5.0
_OWN_PREFIXES: Final = ("backstay_", "agent_", "sqlite_")
_RUNNING: Final = "running"
_LEASED: Final = "leased"
# ``OperationState`` and ``CircuitChange``: the values their decoders take.
_OPERATION_STATES: Final = frozenset({"idle", "leased", "done"})
_CIRCUIT_CHANGES: Final = frozenset({"opened", "half_opened", "closed", "waited"})
_TABLES: Final = "SELECT name FROM sqlite_master WHERE type = 'table'"
_VERSIONS: Final = "SELECT component, version FROM backstay_schema"
_OPEN_ESCALATIONS: Final = "SELECT count(*) FROM backstay_escalations WHERE status = 'open'"
_CIRCUIT_LOG: Final = (
    "SELECT breaker, change, at, reason, wait_s FROM backstay_circuit_log ORDER BY entry_id"
)
_RUNNING_TASKS: Final = (
    "SELECT t.operation_id, o.state, o.owner, o.lease_expires_at FROM backstay_tasks t "
    "LEFT JOIN backstay_operations o ON o.operation_id = t.operation_id "
    "WHERE t.state = ? ORDER BY t.rowid"
)
_HEADER: Final = "SELECT header FROM backstay_registration WHERE id = 1"
_REGISTRATION: Final = "backstay_registration"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HealthFacts:
    """``open_escalations``: escalations waiting for a person; ``circuit_changes``: the
    circuit log as (breaker, change), in order; ``running``: each task stored running,
    with the owner of its live lease (``None``: no live lease); ``recording``: (recorded,
    total) of a batch still being recorded a page at a time, else ``None``."""

    open_escalations: int
    circuit_changes: tuple[tuple[str, str], ...]
    running: tuple[tuple[str, str | None], ...]
    recording: tuple[int, int] | None = None


def read_health_facts(path: Path, *, now: float) -> HealthFacts | None:
    """The facts of the state file ``path`` (it exists), leases judged live at ``now``
    (Unix seconds); ``None`` where the stores must be opened instead (see the module)."""
    try:
        conn = sqlite3.connect(path, timeout=_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        return _read(conn, now)
    except (sqlite3.Error, ValueError, TypeError, KeyError):
        return None
    finally:
        conn.close()


def _read(conn: sqlite3.Connection, now: float) -> HealthFacts | None:
    conn.execute("BEGIN")  # one snapshot of every read
    try:
        tables = {str(row[0]) for row in conn.execute(_TABLES)}
        if any(not name.startswith(_OWN_PREFIXES) for name in tables):
            return None
        if "backstay_schema" not in tables or not _current(conn):
            return None
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            return None
        running = _running(conn, now)
        changes = _circuit_changes(conn)
        if running is None or changes is None:
            return None
        return HealthFacts(
            open_escalations=int(conn.execute(_OPEN_ESCALATIONS).fetchone()[0]),
            circuit_changes=changes,
            running=running,
            recording=_recording(conn) if _REGISTRATION in tables else None,
        )
    finally:
        conn.execute("COMMIT")


def _current(conn: sqlite3.Connection) -> bool:
    """Whether each component is recorded at the version its store reads."""
    found: dict[Any, Any] = dict(conn.execute(_VERSIONS).fetchall())
    return all(type(found.get(name)) is int and found[name] == v for name, v in COMPONENTS.items())


def _running(conn: sqlite3.Connection, now: float) -> tuple[tuple[str, str | None], ...] | None:
    out: dict[str, str | None] = {}
    for operation_id, state, owner, expires in conn.execute(_RUNNING_TASKS, (_RUNNING,)):
        if state is not None and state not in _OPERATION_STATES:
            return None  # the operation store would refuse the row
        live = state == _LEASED and expires is not None and expires > now
        out[str(operation_id)] = owner if live else None
    return tuple(out.items())


def _circuit_changes(conn: sqlite3.Connection) -> tuple[tuple[str, str], ...] | None:
    changes: list[tuple[str, str]] = []
    for breaker, change, at, reason, wait_s in conn.execute(_CIRCUIT_LOG):
        if change not in _CIRCUIT_CHANGES:
            return None  # the circuit log would refuse the row
        _decodes(at, reason, wait_s)
        changes.append((str(breaker), str(change)))
    return tuple(changes)


def _decodes(at: Any, reason: Any, wait_s: Any) -> None:
    """Raise where the circuit log's decoding of an entry raises."""
    _dt.datetime.fromtimestamp(float(at), _dt.UTC)
    if wait_s is not None:
        float(wait_s)
    str(reason)


def _recording(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """(recorded, total) of the kept header, read as ``Registration.from_json`` reads it."""
    row = conn.execute(_HEADER).fetchone()
    if row is None:
        return None
    data: dict[str, Any] = json.loads(row[0])
    total, recorded = int(data["total"]), int(data["recorded"])
    _dt.datetime.fromisoformat(data["started_at"])
    if "ids_sha256" not in data or "source" not in data:
        raise KeyError("ids_sha256")
    return recorded, total
