"""An attempt's spend kept in the transactions that begin and end it: ``AttemptSpendStore``,
which a store bundle offers when its task store and spend ledger share one database, and
``Settlement``, what an attempt is charged once it ran.

Without one (the Redis bundle), the driver reserves the estimate, begins the attempt,
settles the charge and ends the attempt in four steps (``BudgetGate.hold``,
``TaskStore.begin_attempt``, ``BudgetGate.settle``, ``TaskStore.end_attempt``). With one,
the reservation is written in the transaction that begins the attempt and the settlement
in the one that ends it: a runner killed at any point leaves an attempt begun with its
reservation, or neither, and an attempt ended with its charge, or neither
(docs/budgets.md).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Protocol, runtime_checkable

from backstay.engine.records import AttemptEnd, Escalation, NewEscalation, StateChange, TaskRecord
from backstay.engine.spend_ledger import AttemptSpend, SpendLedger
from backstay.policy.spend import Spend, SpendRefusal

__all__ = ["AttemptSpendStore", "Settlement"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Settlement:
    """What attempt ``attempt_id`` is charged (``SpendLedger.settle``'s arguments)."""

    attempt_id: str
    charged: Spend
    prompt_tokens: int
    output_tokens: int
    reported_usd: float | None
    at: _dt.datetime


@runtime_checkable
class AttemptSpendStore(Protocol):
    """Begins an attempt with its reservation and ends it with its settlement, each in one
    transaction of the task store and the spend ledger of the same bundle."""

    def keeps(self, ledger: SpendLedger) -> bool:
        """Whether ``ledger`` is the spend ledger it writes to (a bundle whose ledger was
        replaced, by a wrapper for instance, must not be written around)."""
        ...

    def begin_reserved(
        self,
        operation_id: str,
        *,
        number: int,
        attempt_id: str,
        output_dir: str,
        at: _dt.datetime,
        candidate: str | None,
        spend: AttemptSpend,
    ) -> TaskRecord | SpendRefusal:
        """``spend`` reserved (``SpendLedger.reserve``) and the attempt begun
        (``TaskStore.begin_attempt``) together; the task as stored. A refusal when the
        budgets have no room: nothing is written."""
        ...

    def end_settled(
        self,
        operation_id: str,
        end: AttemptEnd,
        change: StateChange,
        *,
        escalation: NewEscalation | None,
        settlement: Settlement,
    ) -> tuple[TaskRecord, Escalation | None]:
        """``settlement`` charged (``SpendLedger.settle``) and the attempt ended
        (``TaskStore.end_attempt``) together; what ``end_attempt`` returns."""
        ...
