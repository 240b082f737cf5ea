"""The runtime's SQLite tables made before they carried a schema version.

Earlier, the run store and the memory created their tables without a row in
``backstay_schema``; ``open_component`` refuses such a file, which would strand the
checkpoints and pending approvals of a batch begun before. Their layout is version 1's,
so ``adopt_unversioned`` records version 1 for them, in one transaction, before the file
is opened: only in a file whose every table is backstay's own (a foreign file is left for
``open_component`` to refuse, unchanged).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Sequence
from typing import Final

from backstay.store.sqlite._schema import SCHEMA_TABLE

__all__ = ["adopt_unversioned"]

_OWN_PREFIXES: Final = ("backstay_", "agent_", "sqlite_")
_CREATE: Final = (
    f"CREATE TABLE {SCHEMA_TABLE} (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
)
_SELECT: Final = f"SELECT version FROM {SCHEMA_TABLE} WHERE component = ?"  # noqa: S608
_INSERT: Final = f"INSERT INTO {SCHEMA_TABLE} (component, version) VALUES (?, 1)"  # noqa: S608


def _tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {str(row[0]) for row in rows}


def _unversioned(conn: sqlite3.Connection, component: str, tables: Sequence[str]) -> bool:
    present = _tables(conn)
    if not present.intersection(tables) or any(not t.startswith(_OWN_PREFIXES) for t in present):
        return False
    return SCHEMA_TABLE not in present or conn.execute(_SELECT, (component,)).fetchone() is None


def adopt_unversioned(
    path: str, *, component: str, tables: Sequence[str], timeout_s: float
) -> None:
    """Record version 1 of ``component`` in ``path`` when its ``tables`` are there without
    a version (see the module); anything else is left as it is."""
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return
    with (
        contextlib.closing(sqlite3.connect(path, timeout=timeout_s, isolation_level=None)) as conn,
        contextlib.suppress(sqlite3.DatabaseError),
    ):  # open_component says what is wrong
        if not _unversioned(conn, component, tables):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            if _unversioned(conn, component, tables):
                if SCHEMA_TABLE not in _tables(conn):
                    conn.execute(_CREATE)
                conn.execute(_INSERT, (component,))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
