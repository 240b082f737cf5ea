"""``SQLiteTaskStore``: tasks, attempts and escalations in ``<state_dir>/state.sqlite``.

The file is shared with the ``SQLiteOperationStore`` of the same state directory (each
component has its own tables and schema version). Opening it checks it first
(``backstay.store.sqlite._schema``): a damaged file, another application's database, or
one written by a newer backstay raises ``ConfigError`` naming the file and is never
changed. Each change is one ``BEGIN IMMEDIATE`` transaction that reads the task's stored
state, checks the move with ``transition()``, and writes everything the move implies (the
attempt, the task, an escalation) together. WAL mode; ``synchronous=NORMAL`` survives a
killed process (not a power cut). One connection guarded by a lock; ``close()`` it.
"""

from __future__ import annotations

import datetime as _dt
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from backstay._checks import check_number
from backstay._private import make_private_dirs
from backstay.engine._spec_codec import encode_spec
from backstay.engine.records import (
    AttemptEnd,
    AttemptRecord,
    Escalation,
    EscalationStatus,
    NewEscalation,
    ResolveAction,
    StateChange,
    TaskRecord,
)
from backstay.engine.states import TaskState, check_reopen, resolution, transition
from backstay.engine.task import TaskSpec
from backstay.errors import ConfigError
from backstay.redact import redact_mapping
from backstay.store import _task_rows as rows
from backstay.store.sqlite import _task_sql as sql
from backstay.store.sqlite._file import SQLiteFile
from backstay.store.sqlite._registration import SQLiteRegistration
from backstay.store.sqlite._schema import open_component
from backstay.store.sqlite.report_reads import SQLiteReportReads
from backstay.store.sqlite.task_index import SQLiteTaskIndex

__all__ = ["STATE_FILE", "SQLiteTaskStore"]

STATE_FILE: Final = "state.sqlite"
DEFAULT_TIMEOUT_S: Final = 5.0
T = TypeVar("T")


class SQLiteTaskStore(SQLiteRegistration, SQLiteTaskIndex, SQLiteReportReads, SQLiteFile):
    """The ``TaskStore`` of ``state_dir`` (created when missing). ``secrets`` supplies the
    secret environment variables of specs read back (never stored in the file)."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        *,
        secrets: Mapping[str, str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        check_number(timeout_s, where="timeout_s")
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / STATE_FILE
        self._decode_spec = rows.spec_decoder(dict(secrets or {}))
        self._lock = threading.Lock()
        make_private_dirs(self.state_dir)
        self._conn = open_component(
            self.path,
            component=rows.COMPONENT,
            version=rows.SCHEMA_VERSION,
            tables=rows.TABLES,
            ddl=rows.DDL,
            timeout_s=timeout_s,
            migrations=rows.MIGRATIONS,
        )

    # -- plumbing ---------------------------------------------------------------------

    def connection(self) -> tuple[sqlite3.Connection, threading.Lock]:
        """This store's connection and the lock it is used under, for a store of the same
        file that shares them (``SQLiteSpendLedger(tasks=...)``)."""
        return self._conn, self._lock

    def transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` in one ``BEGIN IMMEDIATE`` transaction of this store's
        connection, committed when it returns (for stores sharing the connection)."""
        return self._tx(fn)

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    @staticmethod
    def _current(conn: sqlite3.Connection, operation_id: str) -> tuple[TaskState, int]:
        row = conn.execute(sql.SELECT_STATE, (operation_id,)).fetchone()
        if row is None:
            raise ConfigError(f"no task {operation_id!r} in the state file", where="operation_id")
        return TaskState(row[0]), int(row[1])

    @staticmethod
    def _apply(conn: sqlite3.Connection, operation_id: str, change: StateChange) -> None:
        conn.execute(sql.CHANGE_STATE, rows.change_params(operation_id, change))

    @staticmethod
    def _row_in(conn: sqlite3.Connection, operation_id: str) -> tuple[Any, ...]:
        """The task's whole row (``SELECT_TASK``), read once per change: the move is
        checked from it and the record returned is built from it and what was written."""
        row = conn.execute(sql.SELECT_ONE_TASK, (operation_id,)).fetchone()
        if row is None:
            raise ConfigError(f"no task {operation_id!r} in the state file", where="operation_id")
        return tuple(row)

    def _move(self, conn: sqlite3.Connection, operation_id: str, change: StateChange) -> TaskRecord:
        """Check and write ``change``; the task as a read-back would give it now."""
        row = self._row_in(conn, operation_id)
        transition(TaskState(row[1]), change.state)
        params = rows.change_params(operation_id, change)
        conn.execute(sql.CHANGE_STATE, params)
        return rows.decode_task(rows.changed_row(row, params), self._decode_spec)

    def _task_in(self, conn: sqlite3.Connection, operation_id: str) -> TaskRecord:
        row = conn.execute(sql.SELECT_ONE_TASK, (operation_id,)).fetchone()
        return rows.decode_task(row, self._decode_spec)

    # -- reads ------------------------------------------------------------------------

    def task(self, operation_id: str) -> TaskRecord | None:
        found = self._read(sql.SELECT_ONE_TASK, (operation_id,))
        return rows.decode_task(found[0], self._decode_spec) if found else None

    def tasks(self) -> tuple[TaskRecord, ...]:
        return tuple(
            rows.decode_task(r, self._decode_spec)
            for r in self._read(f"{sql.SELECT_TASK} ORDER BY rowid")
        )

    def attempts(self, operation_id: str | None = None) -> tuple[AttemptRecord, ...]:
        if operation_id is None:
            found = self._read(f"{sql.SELECT_ATTEMPT} ORDER BY rowid")
        else:
            found = self._read(
                f"{sql.SELECT_ATTEMPT} WHERE operation_id = ? ORDER BY number", (operation_id,)
            )
        return tuple(rows.decode_attempt(r) for r in found)

    def escalations(self, *, open_only: bool = False) -> tuple[Escalation, ...]:
        where = " WHERE status = 'open'" if open_only else ""
        found = self._read(f"{sql.SELECT_ESCALATION}{where} ORDER BY escalation_id")
        return tuple(rows.decode_escalation(r) for r in found)

    def escalation(self, escalation_id: int) -> Escalation | None:
        found = self._read(f"{sql.SELECT_ESCALATION} WHERE escalation_id = ?", (escalation_id,))
        return rows.decode_escalation(found[0]) if found else None

    # -- changes ----------------------------------------------------------------------

    def register(self, spec: TaskSpec, *, at: _dt.datetime) -> TaskRecord:
        params = rows.register_params(spec, encode_spec(spec), at)

        def fn(conn: sqlite3.Connection) -> TaskRecord:
            conn.execute(sql.REGISTER, params)
            return self._task_in(conn, spec.operation_id)

        return self._tx(fn)

    def register_all(
        self, specs: Sequence[TaskSpec], *, at: _dt.datetime
    ) -> tuple[TaskRecord, ...]:
        params = [rows.register_params(spec, encode_spec(spec), at) for spec in specs]

        def fn(conn: sqlite3.Connection) -> tuple[TaskRecord, ...]:
            conn.executemany(sql.REGISTER, params)
            return tuple(self._task_in(conn, spec.operation_id) for spec in specs)

        return self._tx(fn)

    def register_each(self, specs: Iterable[TaskSpec], *, at: _dt.datetime) -> int:
        count = 0

        def params() -> Iterator[tuple[Any, ...]]:
            nonlocal count
            for spec in specs:  # encoded as the statement reads it: nothing held
                yield rows.register_params(spec, encode_spec(spec), at)
                count += 1

        self._tx(lambda conn: conn.executemany(sql.REGISTER, params()))
        return count

    def begin_attempt(
        self,
        operation_id: str,
        *,
        number: int,
        attempt_id: str,
        output_dir: str,
        at: _dt.datetime,
        candidate: str | None = None,
    ) -> TaskRecord:
        return self._tx(
            lambda conn: self.begin_in(
                conn,
                operation_id,
                number=number,
                attempt_id=attempt_id,
                output_dir=output_dir,
                at=at,
                candidate=candidate,
            )
        )

    def begin_in(
        self,
        conn: sqlite3.Connection,
        operation_id: str,
        *,
        number: int,
        attempt_id: str,
        output_dir: str,
        at: _dt.datetime,
        candidate: str | None,
    ) -> TaskRecord:
        """``begin_attempt``'s writes in the open transaction of ``conn`` (this store's
        connection, shared with the spend ledger: ``SQLiteAttemptSpend``)."""
        row = self._row_in(conn, operation_id)
        used = row[3]
        if number != used + 1:
            raise ConfigError(
                f"attempt {number} of {operation_id!r} is not the next one ({used} used)",
                where="number",
            )
        transition(TaskState(row[1]), TaskState.RUNNING)
        # The move to running and the count of attempts in one statement (the change has
        # no next run, result or new budget: those columns stay as they are).
        reason = f"running attempt {number}"
        when = at.timestamp()
        conn.execute(sql.BEGIN_TASK, (reason, when, number, operation_id))
        conn.execute(
            sql.BEGIN_ATTEMPT, (operation_id, number, attempt_id, output_dir, when, candidate)
        )
        began = (row[0], TaskState.RUNNING.value, reason, number, row[4], None, row[6], row[7])
        return rows.decode_task((*began, when), self._decode_spec)

    def end_attempt(
        self,
        operation_id: str,
        end: AttemptEnd,
        change: StateChange,
        *,
        escalation: NewEscalation | None = None,
    ) -> tuple[TaskRecord, Escalation | None]:
        return self._tx(
            lambda conn: self.end_in(conn, operation_id, end, change, escalation=escalation)
        )

    def end_in(
        self,
        conn: sqlite3.Connection,
        operation_id: str,
        end: AttemptEnd,
        change: StateChange,
        *,
        escalation: NewEscalation | None,
    ) -> tuple[TaskRecord, Escalation | None]:
        """``end_attempt``'s writes in the open transaction of ``conn`` (see ``begin_in``)."""
        task = self._move(conn, operation_id, change)
        ended = conn.execute(sql.END_ATTEMPT, rows.end_params(operation_id, end))
        if ended.rowcount != 1:
            raise ConfigError(
                f"attempt {end.number} of {operation_id!r} is not running", where="number"
            )
        added = None
        if escalation is not None:
            added = self._escalate(conn, operation_id, task.task_id, escalation, change.at)
        return task, added

    @staticmethod
    def _escalate(
        conn: sqlite3.Connection,
        operation_id: str,
        task_id: str,
        new: NewEscalation,
        at: _dt.datetime,
    ) -> Escalation:
        cursor = conn.execute(
            sql.ADD_ESCALATION,
            (
                operation_id,
                task_id,
                rows.failure_json(new.failure),
                rows.dumps(redact_mapping(dict(new.context))),
                at.timestamp(),
            ),
        )
        row = conn.execute(
            f"{sql.SELECT_ESCALATION} WHERE escalation_id = ?", (cursor.lastrowid,)
        ).fetchone()
        return rows.decode_escalation(row)

    def recover_interrupted(
        self, operation_id: str, *, at: _dt.datetime, killed: int = 0
    ) -> TaskRecord:
        def fn(conn: sqlite3.Connection) -> TaskRecord:
            current, used = self._current(conn, operation_id)
            transition(current, TaskState.RETRYING)  # only a running task may be interrupted
            conn.execute(sql.INTERRUPT_ATTEMPTS, (at.timestamp(), operation_id))
            reason = f"interrupted: the runner stopped during attempt {used}"
            if killed:
                reason += f"; {killed} process(es) it left running were killed"
            change = StateChange(state=TaskState.RETRYING, reason=reason, at=at, next_run_at=at)
            self._apply(conn, operation_id, change)
            return self._task_in(conn, operation_id)

        return self._tx(fn)

    def change_state(
        self, operation_id: str, change: StateChange, *, close_escalations: str | None = None
    ) -> TaskRecord:
        def fn(conn: sqlite3.Connection) -> TaskRecord:
            task = self._move(conn, operation_id, change)
            if close_escalations is not None:
                conn.execute(
                    sql.RESOLVE_OPEN_ESCALATIONS,
                    (
                        ResolveAction.RESUME.value,
                        close_escalations,
                        change.at.timestamp(),
                        "engine",
                        operation_id,
                    ),
                )
            return task

        return self._tx(fn)

    def resolve(
        self,
        escalation_id: int,
        *,
        action: ResolveAction,
        note: str,
        by: str,
        change: StateChange,
    ) -> tuple[Escalation, TaskRecord]:
        def fn(conn: sqlite3.Connection) -> tuple[Escalation, TaskRecord]:
            query = f"{sql.SELECT_ESCALATION} WHERE escalation_id = ?"
            row = conn.execute(query, (escalation_id,)).fetchone()
            if row is None:
                raise ConfigError(f"no escalation {escalation_id}", where="escalation_id")
            found = rows.decode_escalation(row)
            if found.status is EscalationStatus.RESOLVED:
                raise ConfigError(
                    f"escalation {escalation_id} was already resolved ({found.action})",
                    where="escalation_id",
                )
            current, _ = self._current(conn, found.operation_id)
            if resolution(current, change.state) is not None:
                self._apply(conn, found.operation_id, change)
            conn.execute(
                sql.RESOLVE_ESCALATION,
                (action.value, note, change.at.timestamp(), by, escalation_id),
            )
            resolved = rows.decode_escalation(conn.execute(query, (escalation_id,)).fetchone())
            return resolved, self._task_in(conn, found.operation_id)

        return self._tx(fn)

    def reopen(
        self, operation_id: str, change: StateChange, *, spec: TaskSpec | None = None
    ) -> TaskRecord:
        # The engine's controls (and their events) only for a reopen: the readers of a
        # batch (status, health) open this store without them.
        from backstay.engine.controls import replacing  # noqa: PLC0415

        encoded = None if spec is None else encode_spec(replacing(spec, operation_id))

        def fn(conn: sqlite3.Connection) -> TaskRecord:
            current, _ = self._current(conn, operation_id)
            check_reopen(current)
            if encoded is not None:
                conn.execute(sql.UPDATE_SPEC, (encoded, operation_id))
            self._apply(conn, operation_id, change)
            return self._task_in(conn, operation_id)

        return self._tx(fn)

    def cancel(self, operation_id: str, change: StateChange) -> TaskRecord:
        def fn(conn: sqlite3.Connection) -> TaskRecord:
            task = self._move(conn, operation_id, change)
            conn.execute(sql.INTERRUPT_ATTEMPTS, (change.at.timestamp(), operation_id))
            conn.execute(
                sql.RESOLVE_OPEN_ESCALATIONS,
                (ResolveAction.SKIP.value, change.reason, change.at.timestamp(), "operator",
                 operation_id),
            )  # fmt: skip
            return task

        return self._tx(fn)

    # -- lifetime ---------------------------------------------------------------------
