"""``SQLiteSpendLedger``: what the attempts of a state directory spent, and the budgets of
its batch and tenants, in ``<state_dir>/state.sqlite`` (component ``spend``).

One row per attempt (``backstay_spend``, keyed by its attempt id) is written in the
transaction that *reserves* the attempt's estimate, BEFORE the attempt is begun; it is
*settled* with what the attempt really used right after its dispatch, or *released*
(deleted) when the attempt never started. A reservation left open by a runner that died
is charged at its estimate when the task is taken up again (``settle_open``): the
attempt may have run, and nothing says what it used.

Reserving reads the totals of every scope the attempt belongs to (the batch, its tenant,
its task) and checks them with ``backstay.policy.spend.check_spend`` inside one
``BEGIN IMMEDIATE`` transaction, so neither concurrent tasks of one runner nor two runners
on one state file can together reserve past a budget.

The totals are running sums (``backstay_spend_sums``: a field per scope and per adapter
and model, exact fractions as in ``backstay.store._spend_sums``), changed in the
transaction that writes each row, so reserving, settling and estimating cost the same at
the 100,000th task as at the first. A file written before the sums were kept (schema
version 1) gets the table by migration and its sums built from its rows once, in one
transaction, when it is first opened; the marker field says they cover every row.

The batch's and tenants' budgets live in ``backstay_spend_budgets`` (a resumed batch keeps
them; ``set_budget`` changes one). A task's own budget travels in its spec.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from backstay._private import make_private_dirs
from backstay.engine.attempt_spend import Settlement
from backstay.engine.spend_ledger import AttemptSpend
from backstay.policy.spend import (
    EarlierUse,
    ScopeKind,
    ScopeTotals,
    Spend,
    SpendBudget,
    SpendRefusal,
    SpendScope,
    check_spend,
)
from backstay.store import _spend_sums as sums
from backstay.store.sqlite._file import SQLiteFile
from backstay.store.sqlite._schema import open_component
from backstay.store.sqlite.gateway_spend import SQLiteGatewayLedger
from backstay.store.sqlite.tasks import DEFAULT_TIMEOUT_S, STATE_FILE, SQLiteTaskStore

__all__ = ["SQLiteSpendLedger"]

COMPONENT: Final = "spend"
SCHEMA_VERSION: Final = 2
SPEND: Final = "backstay_spend"
BUDGETS: Final = "backstay_spend_budgets"
SUMS: Final = "backstay_spend_sums"
_CREATE_SUMS: Final = f"CREATE TABLE {SUMS} (field TEXT PRIMARY KEY, vector TEXT NOT NULL)"
_MARK_SUMS: Final = f"INSERT INTO {SUMS} (field, vector) VALUES ('{sums.MARKER}', '1')"  # noqa: S608
# Version 1 had no sums: the table is made here, its sums built from the rows on opening.
_MIGRATIONS: Final = {1: (_CREATE_SUMS,)}
_DDL: Final = (
    f"""CREATE TABLE {SPEND} (
    attempt_id TEXT PRIMARY KEY,
    operation_id TEXT NOT NULL,
    tenant TEXT,
    adapter TEXT NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    estimate_usd REAL NOT NULL,
    estimate_tokens INTEGER NOT NULL,
    usd REAL,
    tokens INTEGER,
    prompt_tokens INTEGER,
    output_tokens INTEGER,
    reported_usd REAL,
    reserved_at REAL NOT NULL,
    settled_at REAL
)""",
    f"CREATE INDEX {SPEND}_operation ON {SPEND} (operation_id)",
    f"CREATE INDEX {SPEND}_tenant ON {SPEND} (tenant)",
    f"""CREATE TABLE {BUDGETS} (
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    usd REAL,
    tokens INTEGER,
    updated_at REAL NOT NULL,
    PRIMARY KEY (kind, name)
)""",
    _CREATE_SUMS,
    _MARK_SUMS,
)
_ROW_COLUMNS: Final = (
    "operation_id, tenant, adapter, model, status, estimate_usd, estimate_tokens, usd, tokens, "
    "prompt_tokens, output_tokens, reported_usd"
)
_ROW_NAMES: Final = tuple(name.strip() for name in _ROW_COLUMNS.split(","))
_ROW: Final = f"SELECT {_ROW_COLUMNS} FROM {SPEND} WHERE attempt_id = ?"  # noqa: S608
_OPEN_ROWS: Final = (
    f"SELECT attempt_id, {_ROW_COLUMNS} FROM {SPEND} "  # noqa: S608
    "WHERE operation_id = ? AND status = 'reserved'"
)
_ALL_ROWS: Final = f"SELECT {_ROW_COLUMNS} FROM {SPEND}"  # noqa: S608
_GET_SUM: Final = f"SELECT vector FROM {SUMS} WHERE field = ?"  # noqa: S608
_PUT_SUM: Final = (
    f"INSERT INTO {SUMS} (field, vector) VALUES (?, ?) "  # noqa: S608
    "ON CONFLICT (field) DO UPDATE SET vector = excluded.vector"
)
_HAS_MARKER: Final = f"SELECT 1 FROM {SUMS} WHERE field = '{sums.MARKER}'"  # noqa: S608
_SUM_TENANTS: Final = f"SELECT field FROM {SUMS} WHERE field GLOB 'tenant|*'"  # noqa: S608
_RESERVE: Final = (
    f"INSERT INTO {SPEND} (attempt_id, operation_id, tenant, adapter, model, status, "  # noqa: S608
    "estimate_usd, estimate_tokens, reserved_at) VALUES (?, ?, ?, ?, ?, 'reserved', ?, ?, ?)"
)
# A first reservation (almost every one) is written before its check, in the same
# transaction, and taken back if refused; an attempt id with a row already is reserved
# as before (its earlier reservation released first).
_RESERVE_NEW: Final = f"{_RESERVE} ON CONFLICT (attempt_id) DO NOTHING"
_SETTLE: Final = (
    f"UPDATE {SPEND} SET status = 'settled', usd = ?, tokens = ?, prompt_tokens = ?, "  # noqa: S608
    "output_tokens = ?, reported_usd = ?, settled_at = ? "
    "WHERE attempt_id = ? AND status = 'reserved'"
)
_SETTLE_OPEN: Final = (
    f"UPDATE {SPEND} SET status = 'settled', usd = estimate_usd, "  # noqa: S608
    "tokens = estimate_tokens, settled_at = ? WHERE operation_id = ? AND status = 'reserved'"
)
_RELEASE: Final = f"DELETE FROM {SPEND} WHERE attempt_id = ? AND status = 'reserved'"  # noqa: S608
_SET_BUDGET: Final = (
    f"INSERT INTO {BUDGETS} (kind, name, usd, tokens, updated_at) VALUES (?, ?, ?, ?, ?) "  # noqa: S608
    "ON CONFLICT (kind, name) DO UPDATE SET usd = excluded.usd, tokens = excluded.tokens, "
    "updated_at = excluded.updated_at"
)
_GET_BUDGET: Final = f"SELECT usd, tokens FROM {BUDGETS} WHERE kind = ? AND name = ?"  # noqa: S608
_ALL_BUDGETS: Final = f"SELECT kind, name, usd, tokens FROM {BUDGETS} ORDER BY kind, name"  # noqa: S608
T = TypeVar("T")


@functools.cache
def _get_sums(count: int) -> str:
    return " UNION ALL ".join([f"SELECT field, vector FROM {SUMS} WHERE field = ?"] * count)  # noqa: S608


class SQLiteSpendLedger(SQLiteFile):
    """The spend ledger of ``state_dir``; see the module docstring. ``file_name``: another
    file of the directory than ``state.sqlite`` keeps a ledger of its own (the gateway's
    is another kind: ``beside``)."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        tasks: SQLiteTaskStore | None = None,
        file_name: str = STATE_FILE,
    ) -> None:
        self.path = Path(state_dir) / file_name
        self._lock = threading.Lock()
        make_private_dirs(self.path.parent)
        self._conn = open_component(
            self.path,
            component=COMPONENT,
            version=SCHEMA_VERSION,
            tables=(SPEND, BUDGETS),
            ddl=_DDL,
            timeout_s=timeout_s,
            migrations=_MIGRATIONS,
        )
        self._tx(self._ensure_sums)
        # With ``tasks`` (the task store of the same file), its connection and lock are
        # used from here on, so an attempt's reservation and settlement can be written in
        # the transactions that begin and end it (``SQLiteAttemptSpend``); it closes them.
        self.tasks = tasks
        if tasks is not None:
            if tasks.path.resolve() != self.path.resolve():
                self._conn.close()
                raise ValueError(f"the task store's file {tasks.path} is not {self.path}")
            self._conn.close()
            self._conn, self._lock = tasks.connection()

    def beside(self, name: str) -> SQLiteGatewayLedger:
        """The gateway's ledger in ``<name>.sqlite`` of the same directory (its own
        connection: the caller closes it)."""
        return SQLiteGatewayLedger(self.path.parent, file_name=f"{name}.sqlite")

    def close(self) -> None:
        """Close the connection (the task store closes the one it shares)."""
        if self.tasks is None:
            super().close()

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            return fn(self._conn)

    # -- running sums -----------------------------------------------------------------

    @staticmethod
    def _ensure_sums(conn: sqlite3.Connection) -> None:
        """Build the sums from the rows, once, for a file written before they were kept."""
        if conn.execute(_HAS_MARKER).fetchone() is not None:
            return
        built: dict[str, sums.Vector] = {}
        rows = (dict(zip(_ROW_NAMES, row, strict=True)) for row in conn.execute(_ALL_ROWS))
        sums.add(built, (sums.row_vectors(row) for row in rows))
        conn.execute(f"DELETE FROM {SUMS}")  # noqa: S608
        conn.executemany(_PUT_SUM, [(f, sums.encode(v)) for f, v in built.items()])
        conn.execute(_MARK_SUMS)

    @staticmethod
    def _row(conn: sqlite3.Connection, attempt_id: str) -> sums.Row | None:
        found = conn.execute(_ROW, (attempt_id,)).fetchone()
        return None if found is None else dict(zip(_ROW_NAMES, found, strict=True))

    @staticmethod
    def _sum(conn: sqlite3.Connection, field: str) -> sums.Vector | None:
        found = conn.execute(_GET_SUM, (field,)).fetchone()
        return None if found is None else sums.decode(found[0])

    @staticmethod
    def _sums(conn: sqlite3.Connection, fields: Sequence[str]) -> dict[str, sums.Vector | None]:
        """The sums of ``fields`` (``None``: none kept yet), read in one statement (point
        reads joined by ``UNION ALL``: an ``IN`` list costs SQLite a temporary table)."""
        out: dict[str, sums.Vector | None] = dict.fromkeys(fields)
        if fields:
            for field, vector in conn.execute(_get_sums(len(fields)), tuple(fields)):
                out[field] = sums.decode(vector)
        return out

    def _change_sums(
        self,
        conn: sqlite3.Connection,
        changes: list[tuple[sums.Row | None, sums.Row | None]],
        read: Mapping[str, sums.Vector | None] | None = None,
    ) -> None:
        """Add to the sums what rows going from ``before`` to ``after`` change; ``read``:
        sums already read in this transaction, since unchanged (not read again). Only the
        fields a change adds to are read (a reservation adds nothing to its model's use)."""
        deltas = []
        for before, after in changes:
            deltas += [sums.row_vectors(before, sign=-1), sums.row_vectors(after)]
        fields = sorted({f for delta in deltas for f in delta})
        read = {**(read or {})}
        read.update(self._sums(conn, [f for f in fields if f not in read]))
        known = {f: v for f in fields if (v := read[f]) is not None}
        changed = sums.add(known, deltas)
        conn.executemany(_PUT_SUM, [(f, sums.encode(v)) for f, v in changed.items()])

    # -- budgets ----------------------------------------------------------------------

    def set_budget(self, scope: SpendScope, budget: SpendBudget, *, at: _dt.datetime) -> None:
        """Keep ``budget`` for the batch or a tenant (``SpendBudget()``: no limit)."""
        if scope.kind is ScopeKind.TASK:
            raise ValueError("a task's budget is part of its spec")
        params = (scope.kind.value, scope.name, budget.usd, budget.tokens, at.timestamp())
        self._tx(lambda conn: conn.execute(_SET_BUDGET, params))

    @staticmethod
    def _budget_in(conn: sqlite3.Connection, scope: SpendScope) -> SpendBudget:
        row = conn.execute(_GET_BUDGET, (scope.kind.value, scope.name)).fetchone()
        return SpendBudget() if row is None else SpendBudget(usd=row[0], tokens=row[1])

    def budget(self, scope: SpendScope) -> SpendBudget:
        """The kept budget of the batch or a tenant (``SpendBudget()`` when none)."""
        return self._read(lambda conn: self._budget_in(conn, scope))

    # -- totals -----------------------------------------------------------------------

    @classmethod
    def _totals_in(
        cls,
        conn: sqlite3.Connection,
        scope: SpendScope,
        budget: SpendBudget,
        read: dict[str, sums.Vector | None] | None = None,
    ) -> ScopeTotals:
        """The scope's totals; the sum read is added to ``read`` when given."""
        field = sums.scope_field(scope)
        vector = cls._sum(conn, field)
        if read is not None:
            read[field] = vector
        return sums.scope_totals(vector, scope, budget)

    def totals(self, scope: SpendScope, task_budget: SpendBudget | None = None) -> ScopeTotals:
        """The scope's budget (a task's: ``task_budget``), spent and reserved amounts."""

        def fn(conn: sqlite3.Connection) -> ScopeTotals:
            budget = (
                task_budget or SpendBudget()
                if scope.kind is ScopeKind.TASK
                else self._budget_in(conn, scope)
            )
            return self._totals_in(conn, scope, budget)

        return self._read(fn)

    def overview(self) -> tuple[ScopeTotals, ...]:
        """The batch, then every tenant with a budget or spending, by name."""

        def fn(conn: sqlite3.Connection) -> tuple[ScopeTotals, ...]:
            tenants = {str(r[1]) for r in conn.execute(_ALL_BUDGETS) if r[0] == "tenant"}
            tenants |= {str(r[0]).split("|", 1)[1] for r in conn.execute(_SUM_TENANTS)}
            scopes = [SpendScope(kind=ScopeKind.BATCH)]
            scopes += [SpendScope(kind=ScopeKind.TENANT, name=t) for t in sorted(tenants)]
            return tuple(self._totals_in(conn, s, self._budget_in(conn, s)) for s in scopes)

        return self._read(fn)

    def check(self, attempt: AttemptSpend) -> SpendRefusal | None:
        """Whether ``attempt`` would be admitted now (reads only; ``reserve`` decides)."""
        return self._read(lambda conn: self._check_in(conn, attempt))

    def _check_in(
        self,
        conn: sqlite3.Connection,
        attempt: AttemptSpend,
        read: dict[str, sums.Vector | None] | None = None,
    ) -> SpendRefusal | None:
        scopes = attempt.scopes()
        found = self._sums(conn, [sums.scope_field(scope) for scope in scopes])
        if read is not None:
            read.update(found)
        totals = [
            sums.scope_totals(
                found[sums.scope_field(scope)],
                scope,
                attempt.task_budget or SpendBudget()
                if scope.kind is ScopeKind.TASK
                else self._budget_in(conn, scope),
            )
            for scope in scopes
        ]
        return check_spend(totals, attempt.estimate)

    # -- reservations -----------------------------------------------------------------

    def reserve(self, attempt: AttemptSpend, *, at: _dt.datetime) -> SpendRefusal | None:
        """Hold the attempt's estimate in all its scopes (``None``), or refuse and hold
        nothing. Reserving an attempt again replaces its earlier reservation."""

        return self._tx(lambda conn: self.reserve_in(conn, attempt, at=at))

    def reserve_in(
        self, conn: sqlite3.Connection, attempt: AttemptSpend, *, at: _dt.datetime
    ) -> SpendRefusal | None:
        """``reserve``'s reads and writes in the open transaction of ``conn`` (this ledger's
        connection: a task store's it shares, ``SQLiteAttemptSpend``)."""
        params = (
            attempt.attempt_id,
            attempt.operation_id,
            attempt.tenant,
            attempt.adapter,
            attempt.model,
            attempt.estimate.usd,
            attempt.estimate.tokens,
            at.timestamp(),
        )
        # Checking reads only the sums and budgets, which the row does not change.
        first = conn.execute(_RESERVE_NEW, params).rowcount == 1
        if not first:
            self._release_in(conn, attempt.attempt_id)
        read: dict[str, sums.Vector | None] = {}  # the scopes' sums, read once
        refusal = self._check_in(conn, attempt, read)
        if refusal is not None:
            if first:
                conn.execute(_RELEASE, (attempt.attempt_id,))  # nothing is held
            return refusal
        if not first:
            conn.execute(_RESERVE, params)
        self._change_sums(conn, [(None, sums.reserved_row(attempt))], read)
        return None

    def settle(
        self,
        attempt_id: str,
        charged: Spend,
        *,
        prompt_tokens: int,
        output_tokens: int,
        reported_usd: float | None,
        at: _dt.datetime,
    ) -> bool:
        """Charge ``charged`` instead of the estimate; whether a reservation was open."""
        settlement = Settlement(
            attempt_id=attempt_id,
            charged=charged,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            reported_usd=reported_usd,
            at=at,
        )
        return self._tx(lambda conn: self.settle_in(conn, settlement))

    def settle_in(self, conn: sqlite3.Connection, settlement: Settlement) -> bool:
        """``settle``'s reads and writes in the open transaction of ``conn`` (see
        ``reserve_in``)."""
        charged = settlement.charged
        before = self._row(conn, settlement.attempt_id)
        if before is None or before["status"] != "reserved":
            return False
        params: tuple[Any, ...] = (
            charged.usd,
            charged.tokens,
            settlement.prompt_tokens,
            settlement.output_tokens,
            settlement.reported_usd,
            settlement.at.timestamp(),
            settlement.attempt_id,
        )
        conn.execute(_SETTLE, params)
        after = {
            **before,
            "status": "settled",
            "usd": charged.usd,
            "tokens": charged.tokens,
            "prompt_tokens": settlement.prompt_tokens,
            "output_tokens": settlement.output_tokens,
            "reported_usd": settlement.reported_usd,
        }
        self._change_sums(conn, [(before, after)])
        return True

    def _release_in(self, conn: sqlite3.Connection, attempt_id: str) -> None:
        before = self._row(conn, attempt_id)
        if before is not None and before["status"] == "reserved":
            conn.execute(_RELEASE, (attempt_id,))
            self._change_sums(conn, [(before, None)])

    def release(self, attempt_id: str) -> None:
        """Drop the open reservation of an attempt that never started."""
        self._tx(lambda conn: self._release_in(conn, attempt_id))

    def settle_open(self, operation_id: str, *, at: _dt.datetime) -> int:
        """Charge the open reservations of a task at their estimates (their runner died);
        how many there were."""

        def fn(conn: sqlite3.Connection) -> int:
            found = conn.execute(_OPEN_ROWS, (operation_id,)).fetchall()
            if not found:
                return 0
            conn.execute(_SETTLE_OPEN, (at.timestamp(), operation_id))
            changes: list[tuple[sums.Row | None, sums.Row | None]] = []
            for each in found:
                before = dict(zip(_ROW_NAMES, each[1:], strict=True))
                after = {
                    **before,
                    "status": "settled",
                    "usd": before["estimate_usd"],
                    "tokens": before["estimate_tokens"],
                }
                changes.append((before, after))
            self._change_sums(conn, changes)
            return len(found)

        return int(self._tx(fn))

    def earlier(self, adapter: str, model: str) -> EarlierUse | None:
        """The mean use of the settled attempts of ``adapter`` and ``model`` that used
        tokens; ``None`` before there is one."""
        field = sums.use_field(adapter, model)
        return sums.earlier_use(self._read(lambda conn: self._sum(conn, field)))
