"""Opening a backstay SQLite file safely: check what the file is before touching it.

A file may hold several backstay components (operations now, task state later), each
with its own tables and a row in ``backstay_schema`` giving the version of its layout.
``open_component`` refuses, with a ``ConfigError`` naming the file, a file that is not a
SQLite database, one that holds tables backstay did not create, and one whose component
was written by a newer backstay. Those checks only read: such a file is never changed
(not even switched to WAL). A missing or empty file is initialised. A component at an
older version is migrated when ``migrations`` has the statements taking each older
version to the next (one transaction, the version raised with them); without them it is
refused as before.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Final

from backstay._private import private_new_file
from backstay.errors import ConfigError

__all__ = ["SCHEMA_TABLE", "open_component"]

SCHEMA_TABLE: Final = "backstay_schema"
_PREFIX: Final = "backstay_"
# The tables backstay creates: its components' (``backstay_``), the agent runtime's
# (``agent_``: runs, steps, approvals, tool cache and memory, which live in the engine's
# ``state.sqlite`` beside the tasks) and SQLite's own.
_OWN_PREFIXES: Final = (_PREFIX, "agent_", "sqlite_")
_CREATE_SCHEMA: Final = (
    f"CREATE TABLE {SCHEMA_TABLE} (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
)
_SELECT_VERSION: Final = f"SELECT version FROM {SCHEMA_TABLE} WHERE component = ?"  # noqa: S608
# Another process holding the file is contention, not a damaged file: let it propagate.
_CONTENTION: Final = frozenset({"SQLITE_BUSY", "SQLITE_LOCKED"})
# Neither is a file system that refuses to open, read or write it (read-only, full, I/O).
_REFUSED: Final = ("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_FULL")
_INSERT_VERSION: Final = f"INSERT INTO {SCHEMA_TABLE} (component, version) VALUES (?, ?)"  # noqa: S608


def _tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {str(row[0]) for row in rows}


def _stored_version(
    conn: sqlite3.Connection, where: str, *, component: str, tables: Sequence[str]
) -> int | None:
    """The component's recorded version, ``None`` when it has none; refuses foreign files."""
    present = _tables(conn)
    foreign = sorted(t for t in present if not t.startswith(_OWN_PREFIXES))
    if foreign:
        raise ConfigError(
            f"is not a backstay store (it holds other tables: {', '.join(foreign)}); "
            "it was left unchanged",
            where=where,
        )
    version = None
    if SCHEMA_TABLE in present:
        row = conn.execute(_SELECT_VERSION, (component,)).fetchone()
        version = None if row is None else row[0]
    if version is None and present.intersection(tables):
        raise ConfigError(
            f"holds backstay {component} tables without a schema version; it was left unchanged",
            where=where,
        )
    if version is not None and not isinstance(version, int):
        raise ConfigError(f"has a malformed {component} schema version {version!r}", where=where)
    return version


_UPDATE_VERSION: Final = f"UPDATE {SCHEMA_TABLE} SET version = ? WHERE component = ?"  # noqa: S608


def _migrate(
    conn: sqlite3.Connection,
    where: str,
    *,
    component: str,
    version: int,
    tables: Sequence[str],
    migrations: Mapping[int, Sequence[str]],
) -> None:
    """Take ``component`` from its stored version to ``version``, in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        stored = _stored_version(conn, where, component=component, tables=tables)
        if stored is not None and stored < version:
            for step in range(stored, version):
                for statement in migrations[step]:
                    conn.execute(statement)
            conn.execute(_UPDATE_VERSION, (version, component))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _migratable(stored: int, version: int, migrations: Mapping[int, Sequence[str]]) -> bool:
    return stored < version and all(step in migrations for step in range(stored, version))


def _check_version(version: int, expected: int, where: str, component: str) -> None:
    if version > expected:
        raise ConfigError(
            f"was written by a newer backstay ({component} schema version {version}; this "
            f"version reads {expected}): upgrade backstay; the file was left unchanged",
            where=where,
        )
    if version != expected:
        raise ConfigError(
            f"has {component} schema version {version}, which this backstay cannot read "
            f"(it reads {expected}); the file was left unchanged",
            where=where,
        )


def _initialise(
    conn: sqlite3.Connection,
    where: str,
    *,
    component: str,
    version: int,
    tables: Sequence[str],
    ddl: Sequence[str],
) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Another process may have initialised the file while this one waited for the lock.
        stored = _stored_version(conn, where, component=component, tables=tables)
        if stored is None:
            if SCHEMA_TABLE not in _tables(conn):
                conn.execute(_CREATE_SCHEMA)
            for statement in ddl:
                conn.execute(statement)
            conn.execute(_INSERT_VERSION, (component, version))
        else:
            _check_version(stored, version, where, component)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def open_component(
    path: str | os.PathLike[str],
    *,
    component: str,
    version: int,
    tables: Sequence[str],
    ddl: Sequence[str],
    timeout_s: float,
    migrations: Mapping[int, Sequence[str]] | None = None,
) -> sqlite3.Connection:
    """A connection (autocommit, WAL) to ``path`` holding ``component`` at ``version``.

    ``tables`` are the component's table names and ``ddl`` the statements creating them;
    ``migrations[n]`` the statements taking the component from version ``n`` to ``n + 1``.
    """
    where = os.fspath(path)
    existed = os.path.exists(where)
    conn = sqlite3.connect(where, timeout=timeout_s, isolation_level=None, check_same_thread=False)
    # Made private before anything is written; its -wal and -shm take its mode.
    private_new_file(where, existed)
    try:
        try:
            stored = _stored_version(conn, where, component=component, tables=tables)
            if stored is None:
                _initialise(
                    conn, where, component=component, version=version, tables=tables, ddl=ddl
                )
            elif _migratable(stored, version, migrations or {}):
                _migrate(
                    conn,
                    where,
                    component=component,
                    version=version,
                    tables=tables,
                    migrations=migrations or {},
                )
            else:
                _check_version(stored, version, where, component)
        except sqlite3.DatabaseError as exc:
            name = getattr(exc, "sqlite_errorname", "")
            if name in _CONTENTION or name.startswith(_REFUSED):
                raise
            raise ConfigError(
                f"is not a readable backstay store ({exc}); it was left unchanged", where=where
            ) from None
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn
