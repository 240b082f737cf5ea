"""``SQLiteCircuitLog``: the circuit log (``backstay.engine.circuit_log``) in
``<state_dir>/state.sqlite``, its own component ``circuits``, table
``backstay_circuit_log``.
"""

from __future__ import annotations

import datetime as _dt
import os
import threading
from collections.abc import Collection
from pathlib import Path
from typing import Any, Final

from backstay._private import make_private_dirs
from backstay.engine.circuit_log import CircuitChange, CircuitEntry
from backstay.store.sqlite._file import SQLiteFile
from backstay.store.sqlite._schema import open_component
from backstay.store.sqlite.tasks import DEFAULT_TIMEOUT_S, STATE_FILE

__all__ = ["SQLiteCircuitLog"]

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
