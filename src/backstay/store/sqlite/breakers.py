"""``SQLiteBreakerStore``: breaker records in a SQLite file, shared by processes.

Every transition that changes a record is one ``BEGIN IMMEDIATE`` transaction: the write
lock is taken before the record is read, so two processes can never both decide from the
same record (two half-open probes can never both be reserved). A transition is decided
first from a plain read, and one that keeps the record as it is (most successes on a
closed circuit) ends there, without the write lock. The file is in WAL mode, so plain reads
(``load``) do not wait for writers. Records survive restarts; times in them are Unix
seconds (``shared`` is true).

Calls block for as long as another process holds the write lock (at most ``timeout_s``),
typically tens of microseconds. One connection per store, guarded by a lock, so a store
may be shared by threads; close it with ``close()`` or use it as a context manager.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
from typing import Final

from backstay.breaker.record import CLOSED_RECORD, BreakerRecord
from backstay.breaker.state import Step
from backstay.breaker.store import TransitionFn
from backstay.store.sqlite._file import SQLiteFile

__all__ = ["SQLiteBreakerStore"]

DEFAULT_TIMEOUT_S: Final = 5.0
_TABLE: Final = "backstay_breakers"
_SCHEMA: Final = f"""
CREATE TABLE IF NOT EXISTS {_TABLE} (
    name TEXT PRIMARY KEY,
    record TEXT NOT NULL
)
"""
_SELECT: Final = f"SELECT record FROM {_TABLE} WHERE name = ?"  # noqa: S608 - constant name
_UPSERT: Final = (
    f"INSERT INTO {_TABLE} (name, record) VALUES (?, ?) "  # noqa: S608 - constant name
    "ON CONFLICT(name) DO UPDATE SET record = excluded.record"
)


def _decode(row: tuple[str] | None) -> BreakerRecord | None:
    return None if row is None else _record(row[0])


# A record is read at every permit and success (twice a task of a batch) and mostly
# unchanged in between: its text is parsed once (a record is immutable; a bad text raises
# every time, as nothing is kept for it).
@functools.lru_cache(maxsize=256)
def _record(text: str) -> BreakerRecord:
    return BreakerRecord.from_dict(json.loads(text))


class SQLiteBreakerStore(SQLiteFile):
    """Records in the SQLite file ``path`` (created when missing)."""

    shared: Final = True

    def __init__(
        self, path: str | os.PathLike[str], *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            self.path, timeout=timeout_s, isolation_level=None, check_same_thread=False
        )
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)
        except BaseException:
            self._conn.close()
            raise

    def load(self, name: str) -> BreakerRecord | None:
        with self._lock:
            row = self._conn.execute(_SELECT, (name,)).fetchone()
        return _decode(row)

    def transition(self, name: str, fn: TransitionFn) -> Step:
        with self._lock:
            conn = self._conn
            # First as a read: a step that keeps the record as read (a success on a closed
            # circuit whose window has not moved) is a read-only transaction at that read,
            # and takes no write lock. One that changes it is decided again under the lock.
            record = _decode(conn.execute(_SELECT, (name,)).fetchone()) or CLOSED_RECORD
            step = fn(record)
            if step.record is record:
                return step
            conn.execute("BEGIN IMMEDIATE")
            try:
                record = _decode(conn.execute(_SELECT, (name,)).fetchone()) or CLOSED_RECORD
                step = fn(record)
                if step.record is not record:
                    text = json.dumps(step.record.to_dict(), separators=(",", ":"))
                    conn.execute(_UPSERT, (name, text))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return step

    def names(self) -> list[str]:
        with self._lock:
            rows = self._conn.execute(f"SELECT name FROM {_TABLE} ORDER BY name").fetchall()  # noqa: S608
        return [str(row[0]) for row in rows]
