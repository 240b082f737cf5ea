"""What every SQLite-backed store shares: one connection, used under one lock, closed by
``close()`` or by leaving a ``with`` block."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Self, TypeVar

T = TypeVar("T")


class SQLiteFile:
    """Base of the SQLite stores; subclasses set ``_conn`` and ``_lock`` in ``__init__``."""

    _conn: sqlite3.Connection
    _lock: threading.Lock
    # The store whose connection this one uses (``adopt``); ``None``: its own.
    _adopted: SQLiteFile | None = None

    def adopt(self, owner: SQLiteFile) -> None:
        """Use ``owner``'s connection and lock from now on (a store of the same file,
        opened first): this store's own connection is closed, and ``owner`` closes the
        shared one. One connection for the stores of a state file keeps its pages cached
        between their statements, where each connection would read them again after
        another one wrote."""
        with self._lock:
            self._conn.close()
        self._conn, self._lock = owner._conn, owner._lock
        self._adopted = owner

    def _tx(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` in one ``BEGIN IMMEDIATE`` transaction under the store's lock,
        committed when it returns and rolled back when it raises."""
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                out = fn(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return out

    def close(self) -> None:
        """Close the connection (unless it is another store's: ``adopt``); the store
        cannot be used afterwards."""
        if self._adopted is not None:
            return
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
