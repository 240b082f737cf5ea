"""``RedisSpendLedger``: the spend ledger (reservations, settlements, budgets) in Redis,
so a batch's and a tenant's budgets hold across every machine.

Keys under ``{ns:spend}`` (one slot): ``rows``, a hash of attempt id → the attempt's row
(JSON: operation, tenant, adapter, model, status, estimate, use); ``budgets``, a hash of
``kind|name`` → ``[usd, tokens, updated_at]``. ``reserve`` is one optimistic transaction
over both: it reads every row, checks every scope of the attempt with
``backstay.policy.spend.check_spend`` (the SQLite ledger's check) and writes the
reservation only if none refuses, so two machines can never together reserve past a
budget. Reading every row costs O(attempts) per reservation: fine for the attempts of one
batch (each one an agent run), documented in docs/scale-out.md.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from redis.client import Pipeline

from backstay.clock import SYSTEM_CLOCK
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
from backstay.store.redis._client import RedisConnection
from backstay.store.redis._tx import transact

__all__ = ["RedisSpendLedger"]

T = TypeVar("T")
Row = dict[str, Any]


def _budget_field(scope: SpendScope) -> str:
    return f"{scope.kind.value}|{scope.name}"


def _in_scope(row: Row, scope: SpendScope) -> bool:
    if scope.kind is ScopeKind.TASK:
        return bool(row["operation_id"] == scope.name)
    if scope.kind is ScopeKind.TENANT:
        return bool(row["tenant"] == scope.name)
    return True


def _totals(rows: Iterable[Row], scope: SpendScope, budget: SpendBudget) -> ScopeTotals:
    spent_usd, spent_tokens, held_usd, held_tokens = 0.0, 0, 0.0, 0
    for row in rows:
        if not _in_scope(row, scope):
            continue
        if row["status"] == "settled":
            spent_usd += row["usd"] or 0.0
            spent_tokens += row["tokens"] or 0
        elif row["status"] == "reserved":
            held_usd += row["estimate_usd"]
            held_tokens += row["estimate_tokens"]
    return ScopeTotals(
        scope=scope,
        budget=budget,
        spent=Spend(usd=spent_usd, tokens=spent_tokens),
        reserved=Spend(usd=held_usd, tokens=held_tokens),
    )


class _View:
    """Every row and budget, as read in one transaction or one read."""

    def __init__(self, rows: dict[Any, Any], budgets: dict[Any, Any]) -> None:
        self.rows: dict[str, Row] = {_s(k): json.loads(v) for k, v in rows.items()}
        self.budgets: dict[str, list[Any]] = {_s(k): json.loads(v) for k, v in budgets.items()}

    def budget(self, scope: SpendScope) -> SpendBudget:
        found = self.budgets.get(_budget_field(scope))
        return SpendBudget() if found is None else SpendBudget(usd=found[0], tokens=found[1])

    def totals(self, scope: SpendScope, task_budget: SpendBudget | None = None) -> ScopeTotals:
        budget = (
            (task_budget or SpendBudget()) if scope.kind is ScopeKind.TASK else self.budget(scope)
        )
        return _totals(self.rows.values(), scope, budget)

    def check(self, attempt: AttemptSpend) -> SpendRefusal | None:
        totals = [self.totals(scope, attempt.task_budget) for scope in attempt.scopes()]
        return check_spend(totals, attempt.estimate)


def _s(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


class RedisSpendLedger:
    """The spend ledger of one Redis namespace; see the module docstring."""

    def __init__(self, conn: RedisConnection) -> None:
        self._conn = conn
        self._rows = conn.key("spend", "rows")
        self._budgets = conn.key("spend", "budgets")

    def _read(self) -> _View:
        def read(client: Any) -> _View:
            pipe = client.pipeline(transaction=True)
            pipe.hgetall(self._rows)
            pipe.hgetall(self._budgets)
            rows, budgets = pipe.execute()
            return _View(rows, budgets)

        return self._conn.call(read)

    def _tx(self, decide: Callable[[_View, Pipeline], T]) -> T:
        def body(pipe: Pipeline, now: float) -> T:
            del now
            view = _View(pipe.hgetall(self._rows), pipe.hgetall(self._budgets))
            pipe.multi()
            return decide(view, pipe)

        return transact(self._conn, [self._rows, self._budgets], body, clock=SYSTEM_CLOCK)

    def set_budget(self, scope: SpendScope, budget: SpendBudget, *, at: _dt.datetime) -> None:
        value = json.dumps([budget.usd, budget.tokens, at.timestamp()])
        self._conn.call(lambda c: c.hset(self._budgets, _budget_field(scope), value))

    def budget(self, scope: SpendScope) -> SpendBudget:
        return self._read().budget(scope)

    def totals(self, scope: SpendScope, task_budget: SpendBudget | None = None) -> ScopeTotals:
        return self._read().totals(scope, task_budget)

    def overview(self) -> tuple[ScopeTotals, ...]:
        view = self._read()
        tenants = {k.split("|", 1)[1] for k in view.budgets if k.startswith("tenant|")}
        tenants |= {r["tenant"] for r in view.rows.values() if r["tenant"] is not None}
        scopes = [SpendScope(kind=ScopeKind.BATCH)]
        scopes += [SpendScope(kind=ScopeKind.TENANT, name=t) for t in sorted(tenants)]
        return tuple(view.totals(scope) for scope in scopes)

    def check(self, attempt: AttemptSpend) -> SpendRefusal | None:
        return self._read().check(attempt)

    def reserve(self, attempt: AttemptSpend, *, at: _dt.datetime) -> SpendRefusal | None:
        def decide(view: _View, pipe: Pipeline) -> SpendRefusal | None:
            held = view.rows.get(attempt.attempt_id)
            if held is not None and held["status"] == "reserved":
                del view.rows[attempt.attempt_id]  # reserving again replaces it
                pipe.hdel(self._rows, attempt.attempt_id)
            refusal = view.check(attempt)
            if refusal is None:
                row = {
                    "operation_id": attempt.operation_id,
                    "tenant": attempt.tenant,
                    "adapter": attempt.adapter,
                    "model": attempt.model,
                    "status": "reserved",
                    "estimate_usd": attempt.estimate.usd,
                    "estimate_tokens": attempt.estimate.tokens,
                    "usd": None,
                    "tokens": None,
                    "prompt_tokens": None,
                    "output_tokens": None,
                    "reported_usd": None,
                    "reserved_at": at.timestamp(),
                    "settled_at": None,
                }
                pipe.hset(self._rows, attempt.attempt_id, json.dumps(row))
            return refusal

        return self._tx(decide)

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
        def decide(view: _View, pipe: Pipeline) -> bool:
            row = view.rows.get(attempt_id)
            if row is None or row["status"] != "reserved":
                return False
            row.update(
                status="settled",
                usd=charged.usd,
                tokens=charged.tokens,
                prompt_tokens=prompt_tokens,
                output_tokens=output_tokens,
                reported_usd=reported_usd,
                settled_at=at.timestamp(),
            )
            pipe.hset(self._rows, attempt_id, json.dumps(row))
            return True

        return self._tx(decide)

    def release(self, attempt_id: str) -> None:
        def decide(view: _View, pipe: Pipeline) -> None:
            row = view.rows.get(attempt_id)
            if row is not None and row["status"] == "reserved":
                pipe.hdel(self._rows, attempt_id)

        self._tx(decide)

    def settle_open(self, operation_id: str, *, at: _dt.datetime) -> int:
        def decide(view: _View, pipe: Pipeline) -> int:
            count = 0
            for attempt_id, row in view.rows.items():
                if row["operation_id"] == operation_id and row["status"] == "reserved":
                    row.update(
                        status="settled",
                        usd=row["estimate_usd"],
                        tokens=row["estimate_tokens"],
                        settled_at=at.timestamp(),
                    )
                    pipe.hset(self._rows, attempt_id, json.dumps(row))
                    count += 1
            return count

        return self._tx(decide)

    def earlier(self, adapter: str, model: str) -> EarlierUse | None:
        used = [
            row
            for row in self._read().rows.values()
            if row["status"] == "settled"
            and row["adapter"] == adapter
            and row["model"] == model
            and row["prompt_tokens"] is not None
            and (row["tokens"] or 0) > 0
        ]
        if not used:
            return None
        reported = [r["reported_usd"] for r in used if r["reported_usd"] is not None]
        return EarlierUse(
            prompt_tokens=sum(r["prompt_tokens"] for r in used) / len(used),
            output_tokens=sum(r["output_tokens"] for r in used) / len(used),
            usd=sum(reported) / len(reported) if reported else None,
        )

    def close(self) -> None:
        """The connection belongs to the bundle; nothing to close here."""
