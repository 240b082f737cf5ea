"""The header of a batch being recorded a page at a time, in the SQLite state file
(``backstay.engine.registration``): one row of ``backstay_registration``, written in the
transaction of each page, so a page and the header's count are recorded together.

The table is made by the first page that needs it (``CREATE TABLE IF NOT EXISTS`` in the
page's transaction): a file no batch was recorded a page at a time in has none, and reads
as having no header; the tasks' schema version is not changed by it.
"""

from __future__ import annotations

import datetime as _dt
import sqlite3
from collections.abc import Sequence
from typing import Final

from backstay.engine._spec_codec import encode_spec
from backstay.engine.registration import Registration
from backstay.engine.task import TaskSpec
from backstay.store import _task_rows as rows
from backstay.store.sqlite import _task_sql as sql
from backstay.store.sqlite._file import SQLiteFile

__all__ = ["TABLE", "SQLiteRegistration", "keep_header", "read_header"]

TABLE: Final = "backstay_registration"
_CREATE: Final = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} "
    "(id INTEGER PRIMARY KEY CHECK (id = 1), header TEXT NOT NULL)"
)
_SELECT: Final = f"SELECT header FROM {TABLE} WHERE id = 1"  # noqa: S608 - constant name
_PUT: Final = f"INSERT OR REPLACE INTO {TABLE} (id, header) VALUES (1, ?)"  # noqa: S608
_DELETE: Final = f"DELETE FROM {TABLE} WHERE id = 1"  # noqa: S608


def read_header(conn: sqlite3.Connection) -> Registration | None:
    """The kept header; ``None`` when there is none (or no table yet)."""
    try:
        row = conn.execute(_SELECT).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
    return None if row is None else Registration.from_json(row[0])


def keep_header(conn: sqlite3.Connection, header: Registration, *, first: bool) -> None:
    """Keep ``header`` after its page, inside the page's transaction (see
    ``PagedRegistration.register_page``)."""
    conn.execute(_CREATE)
    if not first:
        kept = read_header(conn)
        if kept is None:
            return  # finished (or replaced by another batch's first page) meanwhile
        if kept.recorded > header.recorded:
            header = kept
    if header.recorded >= header.total:
        conn.execute(_DELETE)
    else:
        conn.execute(_PUT, (header.to_json(),))


class SQLiteRegistration(SQLiteFile):
    """``PagedRegistration`` for ``SQLiteTaskStore`` (its connection, lock and
    transactions: ``SQLiteFile``)."""

    def register_page(
        self, specs: Sequence[TaskSpec], *, at: _dt.datetime, header: Registration
    ) -> int:
        params = [rows.register_params(spec, encode_spec(spec), at) for spec in specs]

        def fn(conn: sqlite3.Connection) -> None:
            conn.executemany(sql.REGISTER, params)
            keep_header(conn, header, first=header.recorded == len(specs))

        self._tx(fn)
        return len(params)

    def registration(self) -> Registration | None:
        with self._lock:
            return read_header(self._conn)
