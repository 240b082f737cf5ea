"""``SQLiteTaskIndex``: the ``TaskIndex`` reads of ``SQLiteTaskStore`` (see
``backstay.engine.task_index``).

The counts come from ``backstay_task_counts``, kept by triggers in the transaction of each
change (``_task_rows.SUMMARY_DDL``); tasks of some states are found through the index on
``state``, a page at a time by ``rowid`` (registration order), with the pattern matched
by SQLite's ``GLOB`` (``[!seq]`` written ``[^seq]`` there).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Collection, Iterator
from typing import Any, Final

from backstay.engine.records import AttemptRecord, TaskRecord
from backstay.engine.states import TaskState
from backstay.engine.task_index import TaskFilter
from backstay.store import _task_rows as rows

__all__ = ["SQLiteTaskIndex"]

_COUNTS: Final = f"SELECT state, n FROM {rows.COUNTS}"  # noqa: S608 - constant names
_OPEN_ESCALATIONS: Final = f"SELECT count(*) FROM {rows.ESCALATIONS} WHERE status = 'open'"  # noqa: S608
# SQLite caps a statement's variables at 32,766 (999 before 3.32): stay far below.
_IDS_PER_QUERY: Final = 500


def _where(where: TaskFilter) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if where.states is not None:
        states = sorted(where.states)
        clauses.append(f"state IN ({', '.join('?' * len(states))})")
        params += [state.value for state in states]
    if where.task_glob is not None:
        clauses.append("task_id GLOB ?")
        params.append(where.task_glob.replace("[!", "[^"))
    return clauses, params


class SQLiteTaskIndex:
    """The index reads; mixed into ``SQLiteTaskStore`` (its connection and decoder)."""

    _conn: sqlite3.Connection
    _lock: threading.Lock
    _decode_spec: rows.SpecDecoder

    def _rows(self, query: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(query, params).fetchall()

    def state_counts(self) -> dict[TaskState, int]:
        found = {str(state): int(n) for state, n in self._rows(_COUNTS)}
        return {state: found.get(state.value, 0) for state in TaskState}

    def count(self, where: TaskFilter) -> int:
        if where.task_glob is None:
            counts = self.state_counts()
            return sum(n for s, n in counts.items() if where.states is None or s in where.states)
        clauses, params = _where(where)
        query = f"SELECT count(*) FROM {rows.TASKS} WHERE {' AND '.join(clauses)}"  # noqa: S608
        return int(self._rows(query, params)[0][0])

    def pages(self, where: TaskFilter, *, size: int) -> Iterator[tuple[TaskRecord, ...]]:
        clauses, params = _where(where)
        clauses.append("rowid > ?")
        query = (
            f"SELECT rowid, {rows.TASK_COLUMNS} FROM {rows.TASKS} "  # noqa: S608
            f"WHERE {' AND '.join(clauses)} ORDER BY rowid LIMIT ?"
        )
        after = 0
        while True:
            found = self._rows(query, [*params, after, size])
            if not found:
                return
            after = int(found[-1][0])
            yield tuple(rows.decode_task(row[1:], self._decode_spec) for row in found)
            if len(found) < size:
                return

    def attempts_of(self, operation_ids: Collection[str]) -> tuple[AttemptRecord, ...]:
        ids = list(operation_ids)
        found: list[tuple[Any, ...]] = []
        for start in range(0, len(ids), _IDS_PER_QUERY):
            chunk = ids[start : start + _IDS_PER_QUERY]
            marks = ", ".join("?" * len(chunk))
            found += self._rows(
                f"SELECT rowid, {rows.ATTEMPT_COLUMNS} FROM {rows.ATTEMPTS} "  # noqa: S608
                f"WHERE operation_id IN ({marks})",
                chunk,
            )
        found.sort(key=lambda row: int(row[0]))
        return tuple(rows.decode_attempt(row[1:]) for row in found)

    def open_escalation_count(self) -> int:
        return int(self._rows(_OPEN_ESCALATIONS)[0][0])
