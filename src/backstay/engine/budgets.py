"""The engine's spending budgets: before each attempt its estimate is reserved, after it
the real use is charged, and a task whose next attempt does not fit is paused.

``BudgetGate`` is what ``TaskDriver`` asks (docs/budgets.md):

* ``reserve(spec, adapter, number)``: the attempt's estimate (``estimate_attempt``) is
  held in the task's, its tenant's and the batch's scopes, in the state file
  (``SQLiteSpendLedger``), BEFORE the attempt is begun; a ``SpendRefusal`` when one of
  them has no room, and nothing is held. ``spec`` and ``adapter`` are the attempt's own:
  for a task with fallbacks, the chosen candidate's adapter, model and settings
  (``engine.fallback.attempt_target``), so the estimate is that candidate's;
* ``hold(...)``: what the driver calls after the circuit's permit: ``reserve``, and on a
  refusal the permit given back (a refusal is no failure of the candidate), then either
  a wait for this runner's attempts in flight or ``pause``;
* ``settle(spec, adapter, number, usage)``: right after the dispatch, the attempt's real
  use (``charge_for``) replaces its estimate;
* ``should_wait(refusal)``: a refusal owed only to reservations of this runner's attempts
  in flight is waited out (``settled()``: until one of them settles), not paused: they
  usually cost less than their estimates;
* ``pause(...)``: the refused task is recorded ``paused`` with a reason starting
  ``budget_exceeded`` (no attempt was begun), then ``budget.exceeded`` and ``task.paused``
  are emitted;
* ``recover(operation_id)``: reservations a dead runner left open are charged at their
  estimates.

A task paused by a budget is taken up again by a later ``run``/``resume`` once its budgets
have room for its next attempt (``admits``), for instance after they were raised.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any, ClassVar, Final

from backstay.adapters.contract import Adapter
from backstay.adapters.spend import attempt_prompt, charge_spend, estimate_spend
from backstay.adapters.usage import Usage
from backstay.clock import Clock
from backstay.engine.attempt_spend import Settlement
from backstay.engine.events import TaskPaused
from backstay.engine.records import StateChange, TaskRecord
from backstay.engine.spend_ledger import AttemptSpend, SpendLedger
from backstay.engine.states import TaskState
from backstay.engine.task import TaskSpec
from backstay.engine.task import attempt_id as make_attempt_id
from backstay.engine.taskstore import TaskStore
from backstay.events import BUS, Event
from backstay.failure import Failure
from backstay.policy.protocols import Permit
from backstay.policy.spend import (
    BUDGET_EXCEEDED,
    EarlierUse,
    Spend,
    SpendRefusal,
)

__all__ = [
    "BUDGET_CODE",
    "BudgetExceeded",
    "BudgetGate",
    "charge_for",
    "estimate_attempt",
    "paused_by_budget",
]

# The failure code of a task a budget stopped (the error contract's).
BUDGET_CODE: Final = "ERR_BUDGET_EXCEEDED"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetExceeded(Event):
    """``budget.exceeded``: the ``scope`` (``task``, ``tenant``, ``batch``; ``name`` for a
    task or tenant) had no room for attempt ``attempt`` of task ``task_id``, estimated at
    ``estimate``; the task is paused, no attempt was begun."""

    name: ClassVar[str] = "budget.exceeded"
    level: ClassVar[int] = logging.WARNING
    task_id: str
    attempt: int
    scope: str
    scope_name: str
    dimension: str
    budget: dict[str, Any]
    spent: dict[str, Any]
    reserved: dict[str, Any]
    estimate: dict[str, Any]
    reason: str


def paused_by_budget(record: TaskRecord) -> bool:
    """Whether ``record`` is a task a budget paused."""
    return record.state is TaskState.PAUSED and record.reason.startswith(BUDGET_EXCEEDED)


def estimate_attempt(spec: TaskSpec, adapter: Adapter, earlier: EarlierUse | None) -> Spend:
    """One attempt's estimated spend (docs/budgets.md, *The estimate*): its tokens by
    ``estimate_tokens``, priced at the adapter's known price; without one, the mean cost of
    earlier attempts of the same adapter and model, else nothing
    (``backstay.adapters.spend.estimate_spend``)."""
    system = spec.tier.system_prompt if spec.tier is not None else None
    prompt = attempt_prompt(prompt=spec.prompt, prompt_file=spec.prompt_file, system_prompt=system)
    return estimate_spend(
        adapter, model=spec.model, config=spec.config, prompt=prompt, earlier=earlier
    )


def charge_for(spec: TaskSpec, adapter: Adapter, usage: Usage, estimate: Spend) -> Spend:
    """What an attempt that used ``usage`` is charged: its tokens, and the cost it
    reported; else its cost at the known price; else (it used tokens at an unknown price)
    its estimate's cost (``backstay.adapters.spend.charge_spend``)."""
    return charge_spend(
        adapter, model=spec.model, config=spec.config, usage=usage, estimate=estimate
    )


class BudgetGate:
    """The budgets asked before every attempt of the engine's tasks; see the module
    docstring. The estimates of attempts in flight are remembered to charge an attempt
    whose cost is unknown."""

    def __init__(self, ledger: SpendLedger, *, clock: Clock) -> None:
        self.ledger = ledger
        self.clock = clock
        self._estimates: dict[str, Spend] = {}
        self._waiters: list[asyncio.Future[None]] = []

    def attempt(self, spec: TaskSpec, adapter: Adapter, number: int) -> AttemptSpend:
        """What attempt ``number`` of ``spec`` on ``adapter`` is reserved under, estimated."""
        return self._attempt(spec, adapter, number)

    def reserved(self, attempt: AttemptSpend) -> None:
        """``attempt`` was reserved elsewhere (``AttemptSpendStore.begin_reserved``): its
        estimate is remembered as ``reserve`` remembers it."""
        self._estimates[attempt.attempt_id] = attempt.estimate

    def charge(self, spec: TaskSpec, adapter: Adapter, number: int, usage: Usage) -> Settlement:
        """What attempt ``number``, which used ``usage``, is charged, for
        ``AttemptSpendStore.end_settled`` (or ``record``) to write; ``settled`` once it is."""
        attempt_id = make_attempt_id(spec.operation_id, number)
        estimate = self._estimates.pop(attempt_id, Spend())
        charged = charge_for(spec, adapter, usage, estimate)
        return Settlement(
            attempt_id=attempt_id,
            charged=charged,
            prompt_tokens=usage.prompt_tokens,
            output_tokens=usage.output_tokens,
            reported_usd=charged.usd if usage.tokens_total else None,
            at=self.clock.now(),
        )

    def record(self, settlement: Settlement) -> None:
        """Write ``settlement`` in a transaction of its own (``settle``'s second half)."""
        self.ledger.settle(
            settlement.attempt_id,
            settlement.charged,
            prompt_tokens=settlement.prompt_tokens,
            output_tokens=settlement.output_tokens,
            reported_usd=settlement.reported_usd,
            at=settlement.at,
        )
        self.settled_now()

    def settled_now(self) -> None:
        """A reservation of this runner was settled: wake the tasks waiting for one."""
        self._wake()

    def _attempt(self, spec: TaskSpec, adapter: Adapter, number: int) -> AttemptSpend:
        earlier = self.ledger.earlier(spec.adapter, spec.model)
        return AttemptSpend(
            attempt_id=make_attempt_id(spec.operation_id, number),
            operation_id=spec.operation_id,
            tenant=spec.tenant,
            adapter=spec.adapter,
            model=spec.model,
            task_budget=spec.budget,
            estimate=estimate_attempt(spec, adapter, earlier),
        )

    def reserve(self, spec: TaskSpec, adapter: Adapter, number: int) -> SpendRefusal | None:
        """Hold attempt ``number``'s estimate; a refusal when it does not fit."""
        attempt = self._attempt(spec, adapter, number)
        refusal = self.ledger.reserve(attempt, at=self.clock.now())
        if refusal is None:
            self._estimates[attempt.attempt_id] = attempt.estimate
        return refusal

    def admits(self, spec: TaskSpec, adapter: Adapter, number: int) -> bool:
        """Whether attempt ``number`` would fit now (holds nothing)."""
        return self.ledger.check(self._attempt(spec, adapter, number)) is None

    def settle(self, spec: TaskSpec, adapter: Adapter, number: int, usage: Usage) -> Spend:
        """Charge attempt ``number`` what it used; the charge."""
        settlement = self.charge(spec, adapter, number, usage)
        self.record(settlement)
        return settlement.charged

    def held(self, spec: TaskSpec, number: int) -> Spend:
        """The estimate reserved for attempt ``number`` (nothing if none is held)."""
        return self._estimates.get(make_attempt_id(spec.operation_id, number), Spend())

    def release(self, spec: TaskSpec, number: int) -> None:
        """Drop attempt ``number``'s reservation: it never started."""
        attempt_id = make_attempt_id(spec.operation_id, number)
        self._estimates.pop(attempt_id, None)
        self.ledger.release(attempt_id)
        self._wake()

    def should_wait(self, refusal: SpendRefusal) -> bool:
        """Whether to wait for this runner's attempts in flight rather than pause: the
        settled spending alone would leave room, and some of them may settle for less."""
        return bool(self._estimates) and refusal.fits_once_settled

    async def settled(self) -> None:
        """Return once one of this runner's reservations is settled or released."""
        if not self._estimates:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def hold(
        self,
        store: TaskStore,
        record: TaskRecord,
        spec: TaskSpec,
        adapter: Adapter,
        permit: Permit | None,
        *,
        policy: str,
    ) -> bool | TaskRecord:
        """Reserve the next attempt of ``record`` (as ``spec`` on ``adapter``): ``True``
        when held. Refused, ``permit`` is released (nothing was attempted), and either
        ``False`` once one of this runner's attempts in flight settled (ask again), or the
        task paused, as stored."""
        refusal = self.reserve(spec, adapter, record.attempts_used + 1)
        if refusal is None:
            return True
        return await self.refused(store, record, refusal, permit, policy=policy)

    async def refused(
        self,
        store: TaskStore,
        record: TaskRecord,
        refusal: SpendRefusal,
        permit: Permit | None,
        *,
        policy: str,
    ) -> bool | TaskRecord:
        """``hold``'s answer to ``refusal`` of the next attempt of ``record``: ``permit``
        released, then ``False`` after waiting for this runner's attempts in flight, or the
        task paused."""
        if permit is not None:
            permit.release()
        if self.should_wait(refusal):
            await self.settled()
            return False
        return self.pause(store, record, refusal, policy=policy)

    def recover(self, operation_id: str) -> int:
        """Charge the reservations a dead runner left open at their estimates."""
        return self.ledger.settle_open(operation_id, at=self.clock.now())

    def told(self, record: TaskRecord, refusal: SpendRefusal, *, attempt: int, policy: str) -> None:
        """Emit ``budget.exceeded`` and ``task.paused`` for ``record``, paused for
        ``refusal`` at attempt ``attempt`` (one its run's request was refused in)."""
        _emit(record, refusal, attempt=attempt, policy=policy)

    def pause(
        self, store: TaskStore, record: TaskRecord, refusal: SpendRefusal, *, policy: str
    ) -> TaskRecord:
        """Record the task ``paused`` for ``refusal`` (no attempt begun), then emit
        ``budget.exceeded`` and ``task.paused``; the task as stored."""
        change = StateChange(state=TaskState.PAUSED, reason=refusal.reason, at=self.clock.now())
        paused = store.change_state(record.operation_id, change)
        _emit(paused, refusal, attempt=record.attempts_used + 1, policy=policy)
        return paused


def _emit(record: TaskRecord, refusal: SpendRefusal, *, attempt: int, policy: str) -> None:
    totals = refusal.totals
    if BUS.wants(BudgetExceeded.level):
        BUS.emit(
            BudgetExceeded(
                operation=record.operation_id,
                policy=policy,
                task_id=record.task_id,
                attempt=attempt,
                scope=str(totals.scope.kind),
                scope_name=totals.scope.name,
                dimension=refusal.dimension,
                budget=totals.budget.to_dict(),
                spent=totals.spent.to_dict(),
                reserved=totals.reserved.to_dict(),
                estimate=refusal.estimate.to_dict(),
                reason=refusal.reason,
            )
        )
    if BUS.wants(TaskPaused.level):
        BUS.emit(
            TaskPaused(
                operation=record.operation_id,
                policy=policy,
                task_id=record.task_id,
                reason=record.reason,
                resumes_at=None,
                failure=Failure(code=BUDGET_CODE, message=refusal.reason),
            )
        )
