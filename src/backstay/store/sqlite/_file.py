"""What every SQLite-backed store shares: one connection, used under one lock, closed by
``close()`` or by leaving a ``with`` block."""

from __future__ import annotations

import sqlite3
import threading
from types import TracebackType
from typing import Self


class SQLiteFile:
    """Base of the SQLite stores; subclasses set ``_conn`` and ``_lock`` in ``__init__``."""

    _conn: sqlite3.Connection
    _lock: threading.Lock

    def close(self) -> None:
        """Close the connection; the store cannot be used afterwards."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
