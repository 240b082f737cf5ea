"""The spend ledger's contract: ``SpendLedger``, what the attempts of a batch spent and
reserved and the budgets of its batch and tenants, and ``AttemptSpend``, what one attempt
is reserved under. Its stores: ``SQLiteSpendLedger`` (``backstay.store.sqlite.spend``,
whose docstring says how reserving and settling work) and ``RedisSpendLedger``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Protocol, runtime_checkable

from backstay.policy.spend import (
    EarlierUse,
    ScopeKind,
    ScopeTotals,
    Spend,
    SpendBudget,
    SpendRefusal,
    SpendScope,
)

__all__ = ["AttemptSpend", "SpendLedger"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AttemptSpend:
    """What one attempt is reserved under: its ids, its tenant, what runs it, its task's
    own budget, and the estimate."""

    attempt_id: str
    operation_id: str
    tenant: str | None
    adapter: str
    model: str
    task_budget: SpendBudget | None
    estimate: Spend

    def scopes(self) -> tuple[SpendScope, ...]:
        """Task, tenant (if any), batch: the narrowest first, so a refusal names it."""
        task = SpendScope(kind=ScopeKind.TASK, name=self.operation_id)
        batch = SpendScope(kind=ScopeKind.BATCH)
        if self.tenant is None:
            return (task, batch)
        return (task, SpendScope(kind=ScopeKind.TENANT, name=self.tenant), batch)


@runtime_checkable
class SpendLedger(Protocol):
    """The spend ledger's contract (``SQLiteSpendLedger``'s methods; a shared store keeps
    the same rows and checks a reservation against the totals in one atomic step)."""

    def set_budget(self, scope: SpendScope, budget: SpendBudget, *, at: _dt.datetime) -> None: ...

    def budget(self, scope: SpendScope) -> SpendBudget: ...

    def totals(self, scope: SpendScope, task_budget: SpendBudget | None = None) -> ScopeTotals: ...

    def overview(self) -> tuple[ScopeTotals, ...]: ...

    def check(self, attempt: AttemptSpend) -> SpendRefusal | None: ...

    def reserve(self, attempt: AttemptSpend, *, at: _dt.datetime) -> SpendRefusal | None: ...

    def settle(
        self,
        attempt_id: str,
        charged: Spend,
        *,
        prompt_tokens: int,
        output_tokens: int,
        reported_usd: float | None,
        at: _dt.datetime,
    ) -> bool: ...

    def release(self, attempt_id: str) -> None: ...

    def settle_open(self, operation_id: str, *, at: _dt.datetime) -> int: ...

    def earlier(self, adapter: str, model: str) -> EarlierUse | None: ...

    def close(self) -> None: ...
