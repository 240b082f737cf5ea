"""``SQLiteReportReads``: the ``ReportReads`` of ``SQLiteTaskStore`` (see
``backstay.engine.report_reads``).

SQLite picks the few fields the report needs out of the stored JSON (``json_extract``),
so no spec, result or usage is decoded in Python: tasks a page at a time by ``rowid``
(through the index on ``state`` when some states are asked for), each page's attempts
added up by one ``GROUP BY`` (the last attempt's columns taken with ``max(rowid)``),
and attempts a page at a time by their ``rowid`` (the order they were made) — all in one
read transaction (``report_snapshot``), so the report is of one moment of the file.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any, Final

from backstay.engine.report_reads import AttemptFact, AttemptTimes, TaskLine
from backstay.engine.states import TaskState
from backstay.engine.task_index import TaskFilter
from backstay.store import _task_rows as rows
from backstay.store.sqlite.task_index import _where

__all__ = ["SQLiteReportReads"]

# SQLite caps a statement's variables at 32,766 (999 before 3.32): stay far below.
_IDS_PER_QUERY: Final = 500
_STATES: Final = {state.value: state for state in TaskState}
# A task without attempts.
_NONE: Final = (0, 0, None, None, 0, 0, 0, 0, 0.0)
_USAGE: Final = ", ".join(
    f"sum(coalesce(json_extract(usage_json, '$.{name}'), 0))"
    for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
)
_LINES: Final = (
    "SELECT rowid, operation_id, task_id, task_run_id, state, reason, "  # noqa: S608
    "json_extract(spec_json, '$.adapter'), json_extract(spec_json, '$.model'), "
    "json_extract(spec_json, '$.fallbacks'), json_extract(result_json, '$.requested_model'), "
    f"json_extract(result_json, '$.model') FROM {rows.TASKS}"
)
# One row per task: its attempts, the failed ones, the last attempt's folder and
# candidate (SQLite takes bare columns from the row of the one max()), usage and cost.
_ADDED_UP: Final = (
    "SELECT operation_id, count(*), sum(failure_json IS NOT NULL), "  # noqa: S608
    f"max(rowid), output_dir, candidate, {_USAGE}, "
    f"total(json_extract(usage_json, '$.cost_usd')) FROM {rows.ATTEMPTS} "
    "WHERE operation_id IN ({marks}) GROUP BY operation_id"
)
_FACTS: Final = (
    "SELECT rowid, started_at, ended_at, outcome, delay_s, "  # noqa: S608
    "json_extract(failure_json, '$.code'), "
    "json_extract(failure_json, '$.retry_after_ms') IS NOT NULL "
    f"FROM {rows.ATTEMPTS} WHERE rowid > ? ORDER BY rowid LIMIT ?"
)
_TIMES: Final = (
    f"SELECT rowid, started_at, ended_at, outcome, delay_s FROM {rows.ATTEMPTS} "  # noqa: S608
    "WHERE rowid > ? ORDER BY rowid LIMIT ?"
)


class SQLiteReportReads:
    """The report's reads; mixed into ``SQLiteTaskStore`` (its connection and lock)."""

    _conn: sqlite3.Connection
    _lock: threading.Lock

    @contextlib.contextmanager
    def report_snapshot(self) -> Iterator[None]:
        """One read transaction around the report's reads: every page sees the file as it
        was at the first (a batch writing meanwhile is not blocked: WAL)."""
        with self._lock:
            self._conn.execute("BEGIN")
        try:
            yield
        finally:
            with self._lock:
                if self._conn.in_transaction:
                    self._conn.execute("COMMIT")

    def _fetch(self, query: str, params: tuple[Any, ...] | list[Any]) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(query, params).fetchall()

    def report_lines(self, where: TaskFilter, *, size: int) -> Iterator[tuple[TaskLine, ...]]:
        clauses, params = _where(where)
        clauses.append("rowid > ?")
        query = f"{_LINES} WHERE {' AND '.join(clauses)} ORDER BY rowid LIMIT ?"
        after = 0
        while True:
            found = self._fetch(query, [*params, after, size])
            if not found:
                return
            after = int(found[-1][0])
            added = self._added_up([row[1] for row in found])
            yield tuple(
                TaskLine(row[1], row[2], row[3], _STATES[row[4]], *row[5:],
                         *added.get(row[1], _NONE))
                for row in found
            )  # fmt: skip
            if len(found) < size:
                return

    def _added_up(self, ids: list[str]) -> dict[str, tuple[Any, ...]]:
        """Per operation id: attempts, failed attempts, last folder, last candidate, the
        four token counts and the cost."""
        out: dict[str, tuple[Any, ...]] = {}
        for start in range(0, len(ids), _IDS_PER_QUERY):
            chunk = ids[start : start + _IDS_PER_QUERY]
            query = _ADDED_UP.format(marks=", ".join("?" * len(chunk)))
            for row in self._fetch(query, chunk):
                out[row[0]] = (row[1], row[2], *row[4:])
        return out

    def attempt_facts(self, *, size: int) -> Iterator[tuple[AttemptFact, ...]]:
        for page in self._attempt_pages(_FACTS, size):
            yield tuple(AttemptFact(r[1], r[2], r[3], r[4], r[5], bool(r[6])) for r in page)

    def attempt_times(self, *, size: int) -> Iterator[tuple[AttemptTimes, ...]]:
        for page in self._attempt_pages(_TIMES, size):
            yield tuple(AttemptTimes(r[1], r[2], r[3], r[4]) for r in page)

    def _attempt_pages(self, query: str, size: int) -> Iterator[list[tuple[Any, ...]]]:
        after = 0
        while True:
            found = self._fetch(query, (after, size))
            if not found:
                return
            after = int(found[-1][0])
            yield found
            if len(found) < size:
                return
