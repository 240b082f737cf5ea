"""``SQLiteOperationStore``: leases and results in a SQLite file, shared by processes.

Every ``claim``, ``renew``, ``complete`` and ``release`` is one ``BEGIN IMMEDIATE``
transaction: the write lock is taken before the row is read, so two processes can never
both decide from the same row (two owners can never both acquire one operation). The
first claim of an operation without a row is one ``INSERT`` instead, which fails (and the
transaction follows) when another process wrote the row first. The file
is in WAL mode, so ``get`` does not wait for writers. Expiries are wall-clock UTC seconds
from the injected clock, comparable across processes and restarts.

Opening checks the file first (``backstay.store.sqlite._schema``): a file that is not a
backstay store, or one written by a newer backstay, raises ``ConfigError`` naming the file
and is never changed. One connection per store, guarded by a lock, so a store may be
shared by threads; close it with ``close()`` or use it as a context manager.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import Final

from backstay._checks import check_number
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.idempotency._store_base import DEFAULT_RESULT_TTL_S, StoreBase, T, TransactionFn
from backstay.idempotency.records import OperationRecord, OperationState
from backstay.store.sqlite._file import SQLiteFile
from backstay.store.sqlite._schema import open_component

__all__ = ["SCHEMA_VERSION", "SQLiteOperationStore"]

DEFAULT_TIMEOUT_S: Final = 5.0
SCHEMA_VERSION: Final = 1
_COMPONENT: Final = "operations"
_TABLE: Final = "backstay_operations"
_COLUMNS: Final = (
    "operation_id, generation, state, owner, lease_ttl_s, lease_expires_at, "
    "result_json, completed_at, result_expires_at"
)
_DDL: Final = (
    f"""CREATE TABLE {_TABLE} (
    operation_id TEXT PRIMARY KEY,
    generation INTEGER NOT NULL,
    state TEXT NOT NULL,
    owner TEXT,
    lease_ttl_s REAL,
    lease_expires_at REAL,
    result_json TEXT,
    completed_at REAL,
    result_expires_at REAL
)""",
)
_SELECT: Final = f"SELECT {_COLUMNS} FROM {_TABLE} WHERE operation_id = ?"  # noqa: S608
_PLACEHOLDERS: Final = ", ".join("?" * len(_COLUMNS.split(",")))
_UPSERT: Final = f"INSERT OR REPLACE INTO {_TABLE} ({_COLUMNS}) VALUES ({_PLACEHOLDERS})"  # noqa: S608
_INSERT: Final = f"INSERT INTO {_TABLE} ({_COLUMNS}) VALUES ({_PLACEHOLDERS})"  # noqa: S608
# A row read in the transaction is changed in place: ``INSERT OR REPLACE`` would delete
# it and insert it again (its key's index entry too) for the same values.
_SETS: Final = ", ".join(f"{name.strip()} = ?" for name in _COLUMNS.split(",")[1:])
_UPDATE: Final = f"UPDATE {_TABLE} SET {_SETS} WHERE operation_id = ?"  # noqa: S608

_Row = tuple[
    str, int, str, str | None, float | None, float | None, str | None, float | None, float | None
]


def _decode(row: _Row | None) -> OperationRecord | None:
    if row is None:
        return None
    return OperationRecord(
        operation_id=row[0],
        generation=row[1],
        state=OperationState(row[2]),
        owner=row[3],
        lease_ttl_s=row[4],
        lease_expires_at=row[5],
        result_json=row[6],
        completed_at=row[7],
        result_expires_at=row[8],
    )


def _encode(record: OperationRecord) -> _Row:
    return (
        record.operation_id,
        record.generation,
        record.state.value,
        record.owner,
        record.lease_ttl_s,
        record.lease_expires_at,
        record.result_json,
        record.completed_at,
        record.result_expires_at,
    )


class SQLiteOperationStore(StoreBase, SQLiteFile):
    """Operations in the SQLite file ``path`` (created when missing)."""

    shared: Final = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock = SYSTEM_CLOCK,
        result_ttl_s: float = DEFAULT_RESULT_TTL_S,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        super().__init__(clock=clock, result_ttl_s=result_ttl_s)
        check_number(timeout_s, where="timeout_s")
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._conn = open_component(
            self.path,
            component=_COMPONENT,
            version=SCHEMA_VERSION,
            tables=(_TABLE,),
            ddl=_DDL,
            timeout_s=timeout_s,
        )

    def _load(self, operation_id: str) -> OperationRecord | None:
        with self._lock:
            row = self._conn.execute(_SELECT, (operation_id,)).fetchone()
        return _decode(row)

    @staticmethod
    def _write(conn: sqlite3.Connection, new: OperationRecord, *, found: bool) -> None:
        """Keep ``new`` (``found``: its operation's row was read in this transaction)."""
        row = _encode(new)
        if found and conn.execute(_UPDATE, (*row[1:], row[0])).rowcount == 1:
            return
        conn.execute(_UPSERT, row)

    def _transaction(self, operation_id: str, fn: TransactionFn[T]) -> T:
        with self._lock:
            conn = self._conn
            # What ``fn`` makes of no record (an operation's first claim) is tried first as
            # one INSERT, atomic on its own: it fails when the row is there, which is then
            # read under the write lock as below (``fn`` is pure: asking it twice is safe).
            # A batch's every task saves a BEGIN, a SELECT and a COMMIT so.
            first, answer = fn(None, self._now())
            if first is not None:
                try:
                    conn.execute(_INSERT, _encode(first))
                except sqlite3.IntegrityError:
                    pass  # the operation has a row: decided from it
                else:
                    return answer
            conn.execute("BEGIN IMMEDIATE")
            try:
                record = _decode(conn.execute(_SELECT, (operation_id,)).fetchone())
                new, answer = fn(record, self._now())
                if new is not None and new is not record:
                    self._write(conn, new, found=record is not None)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return answer
