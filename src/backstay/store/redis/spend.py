"""``RedisSpendLedger``: the spend ledger (reservations, settlements, budgets) in Redis,
so a batch's and a tenant's budgets hold across every machine.

Keys under ``{ns:spend}`` (one slot): ``rows``, a hash of attempt id → the attempt's row
(JSON: operation, tenant, adapter, model, status, estimate, use); ``sums``, the running
sums of the rows per scope and per adapter and model (``_spend_sums``); ``budgets``, a
hash of ``kind|name`` → ``[usd, tokens, updated_at]``. ``reserve`` is one optimistic
transaction over the three: it reads the attempt's row and the sums and budgets of its
scopes, checks every scope with ``backstay.policy.spend.check_spend`` (the SQLite
ledger's check) and writes the reservation, and the sums it changes, only if none
refuses, so two machines can never together reserve past a budget. Reserving, settling,
releasing and estimating read a few fields whatever the number of attempts; charging a
dead runner's open reservations (``settle_open``, on recovery) and the overview read
every row or sum.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Sequence
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
from backstay.store import _spend_sums as sums
from backstay.store.redis._client import RedisConnection
from backstay.store.redis._tx import transact
from backstay.store.redis.gateway_spend import RedisGatewayLedger

__all__ = ["RedisSpendLedger"]

T = TypeVar("T")
Row = dict[str, Any]


def _s(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def _budget(raw: bytes | str | None) -> SpendBudget:
    if raw is None:
        return SpendBudget()
    found = json.loads(raw)
    return SpendBudget(usd=found[0], tokens=found[1])


class RedisSpendLedger:
    """The spend ledger of one Redis namespace; see the module docstring. ``tag``: the
    keys' hash tag, ``spend`` for the batch's (``{ns:spend}``); the gateway's ledger is
    another kind (``beside``)."""

    def __init__(self, conn: RedisConnection, *, tag: str = "spend") -> None:
        self._conn = conn
        self._rows = conn.key(tag, "rows")
        self._sums = conn.key(tag, "sums")
        self._budgets = conn.key(tag, "budgets")
        self._summed = False

    def beside(self, tag: str) -> RedisGatewayLedger:
        """The gateway's ledger on the same connection, under the hash tag ``tag``."""
        return RedisGatewayLedger(self._conn, tag=tag)

    # -- reading ----------------------------------------------------------------------

    def _fields(self, client: Any, fields: Sequence[str]) -> dict[str, sums.Vector | None]:
        if not fields:
            return {}
        values = client.hmget(self._sums, list(fields))
        return {f: sums.decode(v) for f, v in zip(fields, values, strict=True)}

    def _budgets_of(self, client: Any, scopes: Sequence[SpendScope]) -> list[SpendBudget]:
        kept = [s for s in scopes if s.kind is not ScopeKind.TASK]
        values = client.hmget(self._budgets, [sums.scope_field(s) for s in kept]) if kept else []
        found = {s: _budget(v) for s, v in zip(kept, values, strict=True)}
        return [found.get(s, SpendBudget()) for s in scopes]

    def _scope_totals(
        self,
        client: Any,
        scopes: Sequence[SpendScope],
        task_budget: SpendBudget | None,
        adjust: dict[str, sums.Vector] | None = None,
    ) -> list[ScopeTotals]:
        read = self._fields(client, [sums.scope_field(s) for s in scopes])
        vectors = {f: v for f, v in read.items() if v is not None}
        if adjust:
            sums.add(vectors, [adjust])
        budgets = self._budgets_of(client, scopes)
        return [
            sums.scope_totals(
                vectors.get(sums.scope_field(scope)),
                scope,
                (task_budget or SpendBudget()) if scope.kind is ScopeKind.TASK else budget,
            )
            for scope, budget in zip(scopes, budgets, strict=True)
        ]

    def _read(self, fn: Callable[[Any], T]) -> T:
        self._ensure_sums()
        return self._conn.call(fn)

    # -- writing ----------------------------------------------------------------------

    def _tx(self, decide: Callable[[Pipeline], T]) -> T:
        self._ensure_sums()

        def body(pipe: Pipeline, now: float) -> T:
            del now
            return decide(pipe)

        return transact(
            self._conn, [self._rows, self._sums, self._budgets], body, clock=SYSTEM_CLOCK
        )

    def _row(self, pipe: Any, attempt_id: str) -> Row | None:
        raw = pipe.hget(self._rows, attempt_id)
        return None if raw is None else dict(json.loads(raw))

    def _sum_changes(
        self, pipe: Pipeline, changes: Sequence[tuple[Row | None, Row | None]]
    ) -> dict[str, str]:
        """The sums' fields to write for rows going from ``before`` to ``after`` (read
        with ``pipe`` before ``multi``)."""
        fields = sorted({f for pair in changes for row in pair if row for f in sums.fields_of(row)})
        known = {f: v for f, v in self._fields(pipe, fields).items() if v is not None}
        deltas = []
        for before, after in changes:
            deltas += [sums.row_vectors(before, sign=-1), sums.row_vectors(after)]
        return {f: sums.encode(v) for f, v in sums.add(known, deltas).items()}

    def _write(self, pipe: Pipeline, rows: dict[str, Row | None], changed: dict[str, str]) -> None:
        """Queue (after ``multi``) the rows (``None``: deleted) and the sums' fields."""
        for attempt_id, row in rows.items():
            if row is None:
                pipe.hdel(self._rows, attempt_id)
            else:
                pipe.hset(self._rows, attempt_id, json.dumps(row))
        if changed:
            mapping: dict[Any, Any] = changed
            pipe.hset(self._sums, mapping=mapping)

    def _ensure_sums(self) -> None:
        """Build the sums from the rows once, for a namespace written before they were kept."""
        if self._summed:
            return

        def build(pipe: Pipeline, now: float) -> None:
            del now
            if pipe.hexists(self._sums, sums.MARKER):
                return
            rows = [json.loads(v) for v in pipe.hvals(self._rows)]
            built: dict[str, sums.Vector] = {}
            sums.add(built, [sums.row_vectors(row) for row in rows])
            pipe.multi()
            pipe.delete(self._sums)
            mapping: dict[Any, Any] = {f: sums.encode(v) for f, v in built.items()}
            pipe.hset(self._sums, mapping={**mapping, sums.MARKER: "1"})

        transact(self._conn, [self._rows, self._sums], build, clock=SYSTEM_CLOCK)
        self._summed = True

    # -- the ledger -------------------------------------------------------------------

    def set_budget(self, scope: SpendScope, budget: SpendBudget, *, at: _dt.datetime) -> None:
        value = json.dumps([budget.usd, budget.tokens, at.timestamp()])
        self._conn.call(lambda c: c.hset(self._budgets, sums.scope_field(scope), value))

    def budget(self, scope: SpendScope) -> SpendBudget:
        return self._conn.call(lambda c: _budget(c.hget(self._budgets, sums.scope_field(scope))))

    def totals(self, scope: SpendScope, task_budget: SpendBudget | None = None) -> ScopeTotals:
        return self._read(lambda c: self._scope_totals(c, [scope], task_budget)[0])

    def overview(self) -> tuple[ScopeTotals, ...]:
        def read(client: Any) -> tuple[ScopeTotals, ...]:
            budgets = {_s(k): _budget(v) for k, v in client.hgetall(self._budgets).items()}
            fields = {_s(k) for k in client.hkeys(self._sums)} | set(budgets)
            tenants = {f.split("|", 1)[1] for f in fields if f.startswith("tenant|")}
            scopes = [SpendScope(kind=ScopeKind.BATCH)]
            scopes += [SpendScope(kind=ScopeKind.TENANT, name=t) for t in sorted(tenants)]
            return tuple(self._scope_totals(client, scopes, None))

        return self._read(read)

    def check(self, attempt: AttemptSpend) -> SpendRefusal | None:
        def read(client: Any) -> SpendRefusal | None:
            totals = self._scope_totals(client, attempt.scopes(), attempt.task_budget)
            return check_spend(totals, attempt.estimate)

        return self._read(read)

    def reserve(self, attempt: AttemptSpend, *, at: _dt.datetime) -> SpendRefusal | None:
        row: Row = {
            **sums.reserved_row(attempt),
            "reserved_at": at.timestamp(),
            "settled_at": None,
        }

        def decide(pipe: Pipeline) -> SpendRefusal | None:
            old = self._row(pipe, attempt.attempt_id)
            held = old if old is not None and old["status"] == "reserved" else None
            # Reserving again replaces a held reservation: it is checked without it.
            totals = self._scope_totals(
                pipe, attempt.scopes(), attempt.task_budget, sums.row_vectors(held, sign=-1)
            )
            refusal = check_spend(totals, attempt.estimate)
            if refusal is None:
                changes = self._sum_changes(pipe, [(old, row)])
                pipe.multi()
                self._write(pipe, {attempt.attempt_id: row}, changes)
            elif held is not None:
                changes = self._sum_changes(pipe, [(held, None)])
                pipe.multi()
                self._write(pipe, {attempt.attempt_id: None}, changes)
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
        def decide(pipe: Pipeline) -> bool:
            old = self._row(pipe, attempt_id)
            if old is None or old["status"] != "reserved":
                return False
            row = {
                **old,
                "status": "settled",
                "usd": charged.usd,
                "tokens": charged.tokens,
                "prompt_tokens": prompt_tokens,
                "output_tokens": output_tokens,
                "reported_usd": reported_usd,
                "settled_at": at.timestamp(),
            }
            changes = self._sum_changes(pipe, [(old, row)])
            pipe.multi()
            self._write(pipe, {attempt_id: row}, changes)
            return True

        return self._tx(decide)

    def release(self, attempt_id: str) -> None:
        def decide(pipe: Pipeline) -> None:
            old = self._row(pipe, attempt_id)
            if old is not None and old["status"] == "reserved":
                changes = self._sum_changes(pipe, [(old, None)])
                pipe.multi()
                self._write(pipe, {attempt_id: None}, changes)

        self._tx(decide)

    def settle_open(self, operation_id: str, *, at: _dt.datetime) -> int:
        def decide(pipe: Pipeline) -> int:
            rows: dict[str, Row | None] = {}
            pairs: list[tuple[Row | None, Row | None]] = []
            for key, raw in pipe.hgetall(self._rows).items():
                old = json.loads(raw)
                if old["operation_id"] == operation_id and old["status"] == "reserved":
                    row = {
                        **old,
                        "status": "settled",
                        "usd": old["estimate_usd"],
                        "tokens": old["estimate_tokens"],
                        "settled_at": at.timestamp(),
                    }
                    rows[_s(key)] = row
                    pairs.append((old, row))
            if rows:
                changes = self._sum_changes(pipe, pairs)
                pipe.multi()
                self._write(pipe, rows, changes)
            return len(rows)

        return self._tx(decide)

    def earlier(self, adapter: str, model: str) -> EarlierUse | None:
        field = sums.use_field(adapter, model)
        return self._read(lambda c: sums.earlier_use(self._fields(c, [field])[field]))

    def close(self) -> None:
        """The connection belongs to the bundle; nothing to close here."""
