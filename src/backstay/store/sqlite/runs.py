"""``SQLiteRunStore``: checkpoints, approvals and the tool cache in a SQLite file.

In a batch, the engine's ``state.sqlite`` of its state directory: the runtime's tables
(``agent_runs``, ``agent_steps``, ``agent_approvals``, ``agent_tool_cache``) sit beside
the task tables, so a task record and its agent run's checkpoint live in one file. The
file is opened like every backstay store (``open_component``: component ``agent_runs``):
a file that is not a backstay store is refused and left unchanged. Every table's key
starts with the tenant, and every query names it. WAL mode, ``synchronous=NORMAL``; one
connection under one lock.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from backstay.runtime._run_codec import decode_run, header_text, plan_text, step_text
from backstay.runtime.records import Approval, ApprovalStatus, RunRecord
from backstay.runtime.results import StepResult
from backstay.runtime.store import check_decision
from backstay.store.sqlite._adopt import adopt_unversioned
from backstay.store.sqlite._file import SQLiteFile
from backstay.store.sqlite._schema import open_component

__all__ = ["SCHEMA_VERSION", "SQLiteRunStore"]

SCHEMA_VERSION: Final = 1
_COMPONENT: Final = "agent_runs"
_TABLES: Final = ("agent_runs", "agent_steps", "agent_approvals", "agent_tool_cache")
_DDL: Final = (
    "CREATE TABLE agent_runs (tenant TEXT NOT NULL, run_id TEXT NOT NULL, "
    "status TEXT NOT NULL, record TEXT NOT NULL, plan TEXT, PRIMARY KEY (tenant, run_id))",
    "CREATE TABLE agent_steps (tenant TEXT NOT NULL, run_id TEXT NOT NULL, "
    "step_id TEXT NOT NULL, seq INTEGER NOT NULL, result TEXT NOT NULL, "
    "PRIMARY KEY (tenant, run_id, step_id))",
    "CREATE TABLE agent_approvals (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "tenant TEXT NOT NULL, run_id TEXT NOT NULL, tool TEXT NOT NULL, key TEXT NOT NULL, "
    "arguments TEXT NOT NULL, status TEXT NOT NULL, edited_arguments TEXT, "
    "note TEXT NOT NULL DEFAULT '', decided_by TEXT NOT NULL DEFAULT '', "
    "UNIQUE (tenant, run_id, key))",
    "CREATE TABLE agent_tool_cache (tenant TEXT NOT NULL, key TEXT NOT NULL, "
    "value TEXT NOT NULL, PRIMARY KEY (tenant, key))",
)

_APPROVAL_COLUMNS: Final = (
    "id, tenant, run_id, tool, key, arguments, status, edited_arguments, note, decided_by"
)


def _approval(row: tuple[Any, ...]) -> Approval:
    edited = None if row[7] is None else json.loads(row[7])
    return Approval(
        id=row[0],
        tenant=row[1],
        run_id=row[2],
        tool=row[3],
        key=row[4],
        arguments=json.loads(row[5]),
        status=ApprovalStatus(row[6]),
        edited_arguments=edited,
        note=row[8],
        by=row[9],
    )


class SQLiteRunStore(SQLiteFile):
    """The runtime's records in the SQLite file at ``path`` (created when missing)."""

    def __init__(self, path: str | os.PathLike[str], *, timeout_s: float = 30.0) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        adopt_unversioned(self.path, component=_COMPONENT, tables=_TABLES, timeout_s=timeout_s)
        self._conn = open_component(
            self.path,
            component=_COMPONENT,
            version=SCHEMA_VERSION,
            tables=_TABLES,
            ddl=_DDL,
            timeout_s=timeout_s,
        )

    def _header(self, record: RunRecord, *, with_plan: bool) -> None:
        """The run's row; its plan only ``with_plan`` (a plan is written once, not per step)."""
        key = (record.tenant, record.run_id, str(record.status), header_text(record))
        if with_plan:
            plan = plan_text(record)
            self._conn.execute(
                "INSERT INTO agent_runs (tenant, run_id, status, record, plan) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, run_id) DO UPDATE SET "
                "status=excluded.status, record=excluded.record, plan=excluded.plan",
                (*key, plan),
            )
        else:
            self._conn.execute(
                "UPDATE agent_runs SET status = ?, record = ? WHERE tenant = ? AND run_id = ?",
                (key[2], key[3], key[0], key[1]),
            )

    def _step(self, record: RunRecord, result: StepResult, seq: int) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO agent_steps (tenant, run_id, step_id, seq, result) "
            "VALUES (?, ?, ?, ?, ?)",
            (record.tenant, record.run_id, result.step_id, seq, step_text(result)),
        )

    def _write(self, statements: Callable[[], None]) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                statements()
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def save_run(self, record: RunRecord) -> None:
        def write() -> None:
            self._header(record, with_plan=True)
            self._conn.execute(
                "DELETE FROM agent_steps WHERE tenant = ? AND run_id = ?",
                (record.tenant, record.run_id),
            )
            for seq, result in enumerate(record.results):
                self._step(record, result, seq)

        self._write(write)

    def save_progress(self, record: RunRecord, result: StepResult) -> None:
        """The header without the plan (``save_run`` wrote it) and the newest result."""
        seq = next(i for i, r in enumerate(record.results) if r.step_id == result.step_id)

        def write() -> None:
            self._header(record, with_plan=False)
            self._step(record, result, seq)

        self._write(write)

    def load_run(self, tenant: str, run_id: str) -> RunRecord | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT record, plan FROM agent_runs WHERE tenant = ? AND run_id = ?",
                (tenant, run_id),
            ).fetchone()
            steps = self._conn.execute(
                "SELECT result FROM agent_steps WHERE tenant = ? AND run_id = ? ORDER BY seq",
                (tenant, run_id),
            ).fetchall()
        if row is None:
            return None
        return decode_run(row[0], row[1], (s[0] for s in steps))

    def request_approval(
        self, tenant: str, run_id: str, *, tool: str, key: str, arguments: Mapping[str, Any]
    ) -> Approval:
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO agent_approvals (tenant, run_id, tool, key, arguments, "
                "status) VALUES (?, ?, ?, ?, ?, ?)",
                (tenant, run_id, tool, key, json.dumps(dict(arguments), sort_keys=True), "pending"),
            )
            row = self._conn.execute(
                f"SELECT {_APPROVAL_COLUMNS} FROM agent_approvals "  # noqa: S608 - constant
                "WHERE tenant = ? AND run_id = ? AND key = ?",
                (tenant, run_id, key),
            ).fetchone()
        return _approval(row)

    def approval_for(self, tenant: str, run_id: str, key: str) -> Approval | None:
        with self._lock:
            row = self._conn.execute(
                f"SELECT {_APPROVAL_COLUMNS} FROM agent_approvals "  # noqa: S608 - constant
                "WHERE tenant = ? AND run_id = ? AND key = ?",
                (tenant, run_id, key),
            ).fetchone()
        return None if row is None else _approval(row)

    def approvals(self, tenant: str, *, open_only: bool = True) -> tuple[Approval, ...]:
        where = " AND status = 'pending'" if open_only else ""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_APPROVAL_COLUMNS} FROM agent_approvals "  # noqa: S608 - constant
                f"WHERE tenant = ?{where} ORDER BY id",
                (tenant,),
            ).fetchall()
        return tuple(_approval(r) for r in rows)

    def decide(
        self,
        tenant: str,
        approval_id: int,
        status: ApprovalStatus,
        *,
        edited_arguments: Mapping[str, Any] | None = None,
        note: str = "",
        by: str = "human",
    ) -> Approval:
        status = ApprovalStatus(status)
        edited = None if edited_arguments is None else json.dumps(dict(edited_arguments))
        with self._lock:
            row = self._conn.execute(
                f"SELECT {_APPROVAL_COLUMNS} FROM agent_approvals "  # noqa: S608 - constant
                "WHERE tenant = ? AND id = ?",
                (tenant, approval_id),
            ).fetchone()
            check_decision(None if row is None else _approval(row), status, approval_id)
            self._conn.execute(
                "UPDATE agent_approvals SET status = ?, edited_arguments = ?, note = ?, "
                "decided_by = ? WHERE tenant = ? AND id = ? AND status = 'pending'",
                (str(status), edited, note, by, tenant, approval_id),
            )
            row = self._conn.execute(
                f"SELECT {_APPROVAL_COLUMNS} FROM agent_approvals "  # noqa: S608 - constant
                "WHERE tenant = ? AND id = ?",
                (tenant, approval_id),
            ).fetchone()
        return _approval(row)

    def cache_get(self, tenant: str, key: str) -> tuple[bool, Any]:
        with self._lock:
            row = self._conn.execute(
                "SELECT value FROM agent_tool_cache WHERE tenant = ? AND key = ?", (tenant, key)
            ).fetchone()
        return (False, None) if row is None else (True, json.loads(row[0]))

    def cache_put(self, tenant: str, key: str, value: Any) -> None:
        text = json.dumps(value, sort_keys=True, default=str)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO agent_tool_cache (tenant, key, value) VALUES (?, ?, ?)",
                (tenant, key, text),
            )
