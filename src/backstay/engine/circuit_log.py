"""``SQLiteCircuitLog``: what the engine's circuit breakers did during a batch.

The breakers' own records (``backstay.breaker``) say only where each circuit stands now.
The summary of a batch needs its history: how often a circuit opened, and how long tasks
waited for open circuits. Each of those is one ``CircuitEntry`` in the state file
(``<state_dir>/state.sqlite``, its own component ``circuits``, table
``backstay_circuit_log``), written as it happens:

* ``opened``: a circuit opened (it tripped, or a probe failed); ``operation_id`` is the
  task whose attempt's failure opened it;
* ``half_opened``: an open circuit let a probe through (the task that asked);
* ``closed``: the probes succeeded, or a reset (the task whose probe closed it);
* ``waited``: a task found its circuit open and waits ``wait_s``; written BEFORE it sleeps.

A waited entry is a wait, never an attempt: the task's attempt count does not move.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import os
import threading
from collections.abc import Collection
from pathlib import Path
from typing import Any, Final, Protocol, runtime_checkable

from backstay._private import make_private_dirs
from backstay._sqlite import SQLiteFile
from backstay.engine.sqlite_tasks import DEFAULT_TIMEOUT_S, STATE_FILE
from backstay.store._sqlite_schema import open_component

__all__ = ["CircuitChange", "CircuitEntry", "CircuitLog", "SQLiteCircuitLog"]

COMPONENT: Final = "circuits"
SCHEMA_VERSION: Final = 1
TABLE: Final = "backstay_circuit_log"
_DDL: Final = (
    f"""CREATE TABLE {TABLE} (
    entry_id INTEGER PRIMARY KEY AUTOINCREMENT,
    breaker TEXT NOT NULL,
    change TEXT NOT NULL,
    at REAL NOT NULL,
    operation_id TEXT,
    reason TEXT NOT NULL,
    wait_s REAL
)""",
    f"CREATE INDEX {TABLE}_operation ON {TABLE} (operation_id)",
)
_COLUMNS: Final = "breaker, change, at, operation_id, reason, wait_s"
_INSERT: Final = f"INSERT INTO {TABLE} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"  # noqa: S608
_SELECT: Final = f"SELECT {_COLUMNS} FROM {TABLE} ORDER BY entry_id"  # noqa: S608


class CircuitChange(enum.StrEnum):
    """What happened to a circuit, or what a task did about it."""

    OPENED = "opened"
    HALF_OPENED = "half_opened"
    CLOSED = "closed"
    WAITED = "waited"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CircuitEntry:
    """One line of the log; see the module docstring for which fields each change sets."""

    breaker: str
    change: CircuitChange
    at: _dt.datetime
    operation_id: str | None = None
    reason: str = ""
    wait_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "breaker": self.breaker,
            "change": str(self.change),
            "at": self.at.isoformat(),
            "operation_id": self.operation_id,
            "reason": self.reason,
            "wait_s": self.wait_s,
        }


def _decode(row: tuple[Any, ...]) -> CircuitEntry:
    breaker, change, at, operation_id, reason, wait_s = row
    return CircuitEntry(
        breaker=str(breaker),
        change=CircuitChange(change),
        at=_dt.datetime.fromtimestamp(float(at), _dt.UTC),
        operation_id=operation_id,
        reason=str(reason),
        wait_s=None if wait_s is None else float(wait_s),
    )


@runtime_checkable
class CircuitLog(Protocol):
    """Where circuit entries are written and read back (SQLite, or a shared store)."""

    def add(self, entry: CircuitEntry) -> None: ...

    def entries(self, operation_ids: Collection[str] | None = None) -> tuple[CircuitEntry, ...]: ...

    def close(self) -> None: ...


class SQLiteCircuitLog(SQLiteFile):
    """The circuit log of ``state_dir`` (its ``state.sqlite``, created when missing; a
    damaged or newer file is a ``ConfigError`` naming it, left unchanged)."""

    def __init__(
        self, state_dir: str | os.PathLike[str], *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.path = Path(state_dir) / STATE_FILE
        self._lock = threading.Lock()
        make_private_dirs(self.path.parent)
        self._conn = open_component(
            self.path,
            component=COMPONENT,
            version=SCHEMA_VERSION,
            tables=(TABLE,),
            ddl=_DDL,
            timeout_s=timeout_s,
        )

    def add(self, entry: CircuitEntry) -> None:
        """Write ``entry`` (one transaction)."""
        params = (
            entry.breaker,
            entry.change.value,
            entry.at.timestamp(),
            entry.operation_id,
            entry.reason,
            entry.wait_s,
        )
        with self._lock:
            self._conn.execute(_INSERT, params)

    def entries(self, operation_ids: Collection[str] | None = None) -> tuple[CircuitEntry, ...]:
        """Every entry in the order written; only those of ``operation_ids`` when given."""
        with self._lock:
            found = self._conn.execute(_SELECT).fetchall()
        out = (_decode(row) for row in found)
        if operation_ids is None:
            return tuple(out)
        return tuple(e for e in out if e.operation_id in operation_ids)
