"""``SQLiteFallbackStore``: a chain's breakers and cooldowns in one SQLite file.

The breakers are a ``SQLiteBreakerStore`` on the file; the cooldowns are rows of
``backstay_cooldowns`` (name, until as Unix seconds, reason), each change one
``BEGIN IMMEDIATE`` transaction that keeps the later end. The engine uses its
``state.sqlite``, so every runner of a state directory sees the same cooldowns.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import Final

from backstay.breaker.store import BreakerStore
from backstay.store.sqlite._file import SQLiteFile
from backstay.store.sqlite.breakers import SQLiteBreakerStore

__all__ = ["SQLiteFallbackStore"]

DEFAULT_TIMEOUT_S: Final = 5.0
_TABLE: Final = "backstay_cooldowns"
_SCHEMA: Final = f"""
CREATE TABLE IF NOT EXISTS {_TABLE} (
    name TEXT PRIMARY KEY,
    until REAL NOT NULL,
    reason TEXT NOT NULL
)
"""
_UPSERT: Final = (
    f"INSERT INTO {_TABLE} (name, until, reason) VALUES (?, ?, ?) "  # noqa: S608 - constant
    "ON CONFLICT(name) DO UPDATE SET until = excluded.until, reason = excluded.reason "
    "WHERE excluded.until > until"
)
_SELECT: Final = f"SELECT until FROM {_TABLE} WHERE name = ?"  # noqa: S608 - constant name


class SQLiteFallbackStore(SQLiteFile):
    """Breakers and cooldowns in the SQLite file ``path`` (created when missing)."""

    def __init__(
        self, path: str | os.PathLike[str], *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._breakers = SQLiteBreakerStore(self.path, timeout_s=timeout_s)
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=timeout_s, isolation_level=None, check_same_thread=False
            )
            self._conn.execute(_SCHEMA)
        except BaseException:
            self._breakers.close()
            raise

    @property
    def breakers(self) -> BreakerStore:
        return self._breakers

    def cool_down(self, name: str, *, until_s: float, reason: str) -> None:
        with self._lock:
            self._conn.execute(_UPSERT, (name, until_s, reason))

    def cooling_until(self, name: str, *, now_s: float) -> float | None:
        with self._lock:
            row = self._conn.execute(_SELECT, (name,)).fetchone()
        return None if row is None or float(row[0]) <= now_s else float(row[0])

    def close(self) -> None:
        try:
            self._breakers.close()
        finally:
            super().close()
