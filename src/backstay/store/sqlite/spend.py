"""``SQLiteSpendLedger``: what the attempts of a state directory spent, and the budgets of
its batch and tenants, in ``<state_dir>/state.sqlite`` (component ``spend``).

One row per attempt (``backstay_spend``, keyed by its attempt id) is written in the
transaction that *reserves* the attempt's estimate, BEFORE the attempt is begun; it is
*settled* with what the attempt really used right after its dispatch, or *released*
(deleted) when the attempt never started. A reservation left open by a runner that died
is charged at its estimate when the task is taken up again (``settle_open``): the
attempt may have run, and nothing says what it used.

Reserving reads the totals of every scope the attempt belongs to (the batch: every row;
its tenant; its task) and checks them with ``backstay.policy.spend.check_spend`` inside one
``BEGIN IMMEDIATE`` transaction, so neither concurrent tasks of one runner nor two runners
on one state file can together reserve past a budget.

The batch's and tenants' budgets live in ``backstay_spend_budgets`` (a resumed batch keeps
them; ``set_budget`` changes one). A task's own budget travels in its spec.
"""

from __future__ import annotations

import datetime as _dt
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

from backstay._private import make_private_dirs
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
from backstay.store.sqlite._file import SQLiteFile
from backstay.store.sqlite._schema import open_component
from backstay.store.sqlite.tasks import DEFAULT_TIMEOUT_S, STATE_FILE

__all__ = ["SQLiteSpendLedger"]

COMPONENT: Final = "spend"
SCHEMA_VERSION: Final = 1
SPEND: Final = "backstay_spend"
BUDGETS: Final = "backstay_spend_budgets"
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
)
_TOTALS: Final = (
    "SELECT coalesce(sum(CASE WHEN status = 'settled' THEN usd END), 0.0), "  # noqa: S608
    "coalesce(sum(CASE WHEN status = 'settled' THEN tokens END), 0), "
    "coalesce(sum(CASE WHEN status = 'reserved' THEN estimate_usd END), 0.0), "
    f"coalesce(sum(CASE WHEN status = 'reserved' THEN estimate_tokens END), 0) FROM {SPEND}"
)
_RESERVE: Final = (
    f"INSERT INTO {SPEND} (attempt_id, operation_id, tenant, adapter, model, status, "  # noqa: S608
    "estimate_usd, estimate_tokens, reserved_at) VALUES (?, ?, ?, ?, ?, 'reserved', ?, ?, ?)"
)
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
_EARLIER: Final = (
    "SELECT count(*), avg(prompt_tokens), avg(output_tokens), avg(reported_usd) "  # noqa: S608
    f"FROM {SPEND} WHERE status = 'settled' AND adapter = ? AND model = ? "
    "AND prompt_tokens IS NOT NULL AND tokens > 0"
)
_SET_BUDGET: Final = (
    f"INSERT INTO {BUDGETS} (kind, name, usd, tokens, updated_at) VALUES (?, ?, ?, ?, ?) "  # noqa: S608
    "ON CONFLICT (kind, name) DO UPDATE SET usd = excluded.usd, tokens = excluded.tokens, "
    "updated_at = excluded.updated_at"
)
_GET_BUDGET: Final = f"SELECT usd, tokens FROM {BUDGETS} WHERE kind = ? AND name = ?"  # noqa: S608
_ALL_BUDGETS: Final = f"SELECT kind, name, usd, tokens FROM {BUDGETS} ORDER BY kind, name"  # noqa: S608
_TENANTS: Final = f"SELECT DISTINCT tenant FROM {SPEND} WHERE tenant IS NOT NULL"  # noqa: S608
T = TypeVar("T")


class SQLiteSpendLedger(SQLiteFile):
    """The spend ledger of ``state_dir``; see the module docstring."""

    def __init__(
        self, state_dir: str | os.PathLike[str], *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.path = Path(state_dir) / STATE_FILE
        self._lock = threading.Lock()
        make_private_dirs(self.path.parent)
        self._conn = open_component(
            self.path,
            component=COMPONENT,
            version=SCHEMA_VERSION,
            tables=(SPEND, BUDGETS),
            ddl=_DDL,
            timeout_s=timeout_s,
        )

    def _tx(self, fn: Callable[[sqlite3.Connection], T]) -> T:
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

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            return fn(self._conn)

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

    @staticmethod
    def _totals_in(conn: sqlite3.Connection, scope: SpendScope, budget: SpendBudget) -> ScopeTotals:
        params: tuple[str, ...]
        if scope.kind is ScopeKind.TASK:
            query, params = f"{_TOTALS} WHERE operation_id = ?", (scope.name,)
        elif scope.kind is ScopeKind.TENANT:
            query, params = f"{_TOTALS} WHERE tenant = ?", (scope.name,)
        else:
            query, params = _TOTALS, ()
        spent_usd, spent_tokens, held_usd, held_tokens = conn.execute(query, params).fetchone()
        return ScopeTotals(
            scope=scope,
            budget=budget,
            spent=Spend(usd=float(spent_usd), tokens=int(spent_tokens)),
            reserved=Spend(usd=float(held_usd), tokens=int(held_tokens)),
        )

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
            tenants |= {str(r[0]) for r in conn.execute(_TENANTS)}
            scopes = [SpendScope(kind=ScopeKind.BATCH)]
            scopes += [SpendScope(kind=ScopeKind.TENANT, name=t) for t in sorted(tenants)]
            return tuple(self._totals_in(conn, s, self._budget_in(conn, s)) for s in scopes)

        return self._read(fn)

    def check(self, attempt: AttemptSpend) -> SpendRefusal | None:
        """Whether ``attempt`` would be admitted now (reads only; ``reserve`` decides)."""
        return self._read(lambda conn: self._check_in(conn, attempt))

    def _check_in(self, conn: sqlite3.Connection, attempt: AttemptSpend) -> SpendRefusal | None:
        totals = [
            self._totals_in(
                conn,
                scope,
                attempt.task_budget or SpendBudget()
                if scope.kind is ScopeKind.TASK
                else self._budget_in(conn, scope),
            )
            for scope in attempt.scopes()
        ]
        return check_spend(totals, attempt.estimate)

    # -- reservations -----------------------------------------------------------------

    def reserve(self, attempt: AttemptSpend, *, at: _dt.datetime) -> SpendRefusal | None:
        """Hold the attempt's estimate in all its scopes (``None``), or refuse and hold
        nothing. Reserving an attempt again replaces its earlier reservation."""

        def fn(conn: sqlite3.Connection) -> SpendRefusal | None:
            conn.execute(_RELEASE, (attempt.attempt_id,))
            refusal = self._check_in(conn, attempt)
            if refusal is None:
                conn.execute(
                    _RESERVE,
                    (
                        attempt.attempt_id,
                        attempt.operation_id,
                        attempt.tenant,
                        attempt.adapter,
                        attempt.model,
                        attempt.estimate.usd,
                        attempt.estimate.tokens,
                        at.timestamp(),
                    ),
                )
            return refusal

        return self._tx(fn)

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
        params: tuple[Any, ...] = (
            charged.usd,
            charged.tokens,
            prompt_tokens,
            output_tokens,
            reported_usd,
            at.timestamp(),
            attempt_id,
        )
        return bool(self._tx(lambda conn: conn.execute(_SETTLE, params).rowcount))

    def release(self, attempt_id: str) -> None:
        """Drop the open reservation of an attempt that never started."""
        self._tx(lambda conn: conn.execute(_RELEASE, (attempt_id,)))

    def settle_open(self, operation_id: str, *, at: _dt.datetime) -> int:
        """Charge the open reservations of a task at their estimates (their runner died);
        how many there were."""
        params = (at.timestamp(), operation_id)
        return int(self._tx(lambda conn: conn.execute(_SETTLE_OPEN, params).rowcount))

    def earlier(self, adapter: str, model: str) -> EarlierUse | None:
        """The mean use of the settled attempts of ``adapter`` and ``model`` that used
        tokens; ``None`` before there is one."""
        row = self._read(lambda conn: conn.execute(_EARLIER, (adapter, model)).fetchone())
        if not row or not row[0]:
            return None
        return EarlierUse(
            prompt_tokens=float(row[1]),
            output_tokens=float(row[2]),
            usd=None if row[3] is None else float(row[3]),
        )
