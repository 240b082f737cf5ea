"""``AttemptBudget``: a task's spending budgets, asked for each request an agent CLI's
attempt makes through the in-process gateway: ``backstay.adapters.request_spend``'s rule
over the task's scopes (task, tenant, batch) in the engine's spend ledger, the attempt's
reservation (``BudgetGate.held``) taken out of them.

The first refusal is kept (``refusal``): the gateway answers the request with a 400
naming the budget, the CLI stops, and the driver ends the attempt failed
(``REQUEST_BUDGET_CODE``) and the task ``paused`` with the refusal's ``budget_exceeded``
reason (``stop_attempt``), as a refused attempt is paused. Other attempts in flight are
counted at their reservations until they settle. The ledgers are thread-safe: the
gateway's thread reads them.

Through a shared gateway, the run carries what this budget knows instead (``shared``); to
one that keeps no spend ledger, also an allowance (``allowance``: the task's budgets'
totals and a share of their room, reserved here for the attempt), raised while the run
goes on (``top_up``; ``backstay.engine.run_allowance``).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping
from typing import Any, Final

from backstay.adapters.contract import Adapter
from backstay.adapters.request_spend import RequestSpend
from backstay.adapters.usage import Usage
from backstay.engine.budgets import BudgetGate
from backstay.engine.records import AttemptEnd, AttemptOutcome, StateChange, TaskRecord
from backstay.engine.run_allowance import (
    allowance_hold,
    allowance_json,
    allowance_share,
    others,
    parse_granted,
    top_up,
    top_up_due,
)
from backstay.engine.spend_ledger import AttemptSpend
from backstay.engine.states import TaskState
from backstay.engine.task import TaskSpec
from backstay.engine.taskstore import TaskStore
from backstay.failure import Failure
from backstay.idempotency.ids import attempt_id as make_attempt_id
from backstay.policy.spend import ScopeKind, ScopeTotals, Spend, SpendBudget, SpendRefusal

__all__ = [
    "ALLOWANCE_TRIES",
    "REQUEST_BUDGET_CODE",
    "AttemptBudget",
    "refused_request",
    "stop_attempt",
]

# The failure of an attempt whose request a budget refused (the run reached its budget).
REQUEST_BUDGET_CODE: Final = "ERR_LIMIT_BUDGET"
# Times an allowance is reserved before the attempt keeps an empty reservation.
ALLOWANCE_TRIES: Final = 4


class AttemptBudget(RequestSpend):
    """Attempt ``number`` of ``spec`` on ``adapter`` (its candidate's), as its requests
    see the budgets of ``gate``; see the module docstring."""

    def __init__(self, gate: BudgetGate, spec: TaskSpec, adapter: Adapter, number: int) -> None:
        self._ledger = gate.ledger
        self._attempt = AttemptSpend(
            attempt_id=make_attempt_id(spec.operation_id, number),
            operation_id=spec.operation_id,
            tenant=spec.tenant,
            adapter=spec.adapter,
            model=spec.model,
            task_budget=spec.budget,
            estimate=Spend(),
        )
        self._task_id = spec.task_id
        self._clock = gate.clock
        # The run's grant through a gateway without a spend ledger (``allowance``).
        self._granted: SpendBudget | None = None
        self._first = Spend()  # the attempt's estimate, before its allowance
        self._parallel = 1
        super().__init__(
            totals=self._scopes,
            held=gate.held(spec, number),
            adapter=adapter,
            model=spec.model,
            config=spec.config,
            describe=self._message,
        )

    def _scopes(self) -> list[ScopeTotals]:
        attempt = self._attempt
        return [
            self._ledger.totals(
                scope, attempt.task_budget if scope.kind is ScopeKind.TASK else None
            )
            for scope in attempt.scopes()
        ]

    def _message(self, refusal: SpendRefusal) -> str:
        return refused_request(refusal, self._task_id)

    def allowance(self, parallel: int = 1) -> dict[str, Any] | None:
        """Give the run an allowance (``backstay.engine.run_allowance``), for a shared
        gateway that keeps no spend ledger: a share of the room of the task's budgets
        (``allowance_share``: a shared scope's room divided by ``parallel``, the attempts
        that can run at once), reserved in the ledger as this attempt's reservation in
        place of its estimate. As JSON to add to the run's budget object: ``allowance``,
        the scopes' totals as they stand without it (the gateway checks each request
        against them), and ``granted``. No key or prompt. ``None`` when none of the scopes
        has a budget: there is nothing to hold the run to.

        Reserving again replaces the reservation, and drops it when refused (another
        runner changed the totals since they were read): the totals are read again, at
        most ``ALLOWANCE_TRIES`` times; then an empty reservation is kept, so that the
        attempt is still settled, with nothing granted (a top-up may grant it more)."""
        estimate = self._held
        self._first, self._parallel = estimate, parallel
        held = estimate
        for _ in range(ALLOWANCE_TRIES):
            scopes = others(self._scopes(), held)
            if not scopes:
                return None
            granted = allowance_share(scopes, estimate, parallel)
            hold = allowance_hold(granted, estimate)
            if self._reserve(hold) is None:
                self._held, self._granted = hold, granted
                return _raise(scopes, granted)
            held = Spend()  # the refused reservation was dropped
        self._reserve(Spend())
        self._held = Spend()
        scopes = others(self._scopes(), Spend())
        granted = allowance_share(scopes, Spend(), parallel)
        self._granted = SpendBudget(
            usd=None if granted.usd is None else 0.0,
            tokens=None if granted.tokens is None else 0,
        )
        return _raise(scopes, self._granted)

    def top_up(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """The run's grant raised, as JSON for the gateway (``allowance``, ``granted``), when
        the run's ``state`` there (``granted``, ``used``, ``in_flight``, ``wanted``) says it
        has used more than half of it or a request waits for more (``top_up_due``); the
        larger grant reserved first, as ``allowance`` reserves. ``None``: not due, or no
        allowance was given. With no room left, the grant stays and the totals are fresh,
        so that the gateway refuses the request it cannot hold naming the budget.
        Called on the thread that keeps the run's grant (not the event loop's)."""
        granted = self._granted
        if granted is None:
            return None
        used, wanted = _amounts(state)
        if not top_up_due(granted, used) and wanted == Spend():
            return None
        for _ in range(ALLOWANCE_TRIES):
            scopes = others(self._scopes(), self._held)
            raised = top_up(
                scopes, granted, estimate=self._first, parallel=self._parallel, wanted=wanted
            )
            hold = allowance_hold(raised, self._first)
            if hold == self._held:
                return _raise(scopes, granted)
            if self._reserve(hold) is None:
                self._held, self._granted = hold, raised
                return _raise(scopes, raised)
            self._held = Spend()  # the refused reservation was dropped
        # Raced every time: hold what was granted before, if it still fits.
        before = allowance_hold(granted, self._first)
        if self._reserve(before) is None:
            self._held = before
        else:  # an empty reservation, so that the attempt is still settled
            self._reserve(Spend())
        return None

    def _reserve(self, amount: Spend) -> SpendRefusal | None:
        attempt = dataclasses.replace(self._attempt, estimate=amount)
        return self._ledger.reserve(attempt, at=self._clock.now())

    def shared(self) -> dict[str, Any]:
        """What a shared gateway needs to ask its own spend ledger for this attempt's
        requests (``backstay.engine.shared_budget``), as JSON: the scopes, the task's
        budget, the attempt's reservation, and what prices a request. No key or prompt."""
        attempt = self._attempt
        budget = attempt.task_budget
        prices = self._config.get("prices")
        return {
            "operation_id": attempt.operation_id,
            "task_id": self._task_id,
            "tenant": attempt.tenant,
            "task_budget": None if budget is None else budget.to_dict(),
            "held": self._held.to_dict(),
            "adapter": attempt.adapter,
            "model": attempt.model,
            **({} if prices is None else {"prices": prices}),
        }


def _raise(scopes: list[ScopeTotals], granted: SpendBudget) -> dict[str, Any]:
    return {"allowance": allowance_json(scopes), "granted": granted.to_dict()}


def _amounts(state: Mapping[str, Any]) -> tuple[Spend, Spend]:
    """What a run's ``state`` at the gateway says it used (answers and requests in flight)
    and wants beyond its grant; ``ConfigError`` naming a wrong field."""
    found = {}
    for name in ("used", "in_flight", "wanted"):
        value = parse_granted(state.get(name, {}))
        found[name] = Spend(usd=value.usd or 0.0, tokens=value.tokens or 0)
    return found["used"] + found["in_flight"], found["wanted"]


def refused_request(refusal: SpendRefusal, task_id: str, *, paused: bool = True) -> str:
    """What a request ``refusal`` refused is answered with (the gateway's 400): a batch's
    task is paused; a single run (``paused=False``, ``backstay run``) just ends."""
    reason = refusal.reason.replace("the next attempt", "the next request of its run")
    if not paused:
        return f"{reason}; the run stops here"
    return f"{reason}; task {task_id} stops here and is paused"


def stop_attempt(
    store: TaskStore,
    operation_id: str,
    *,
    number: int,
    refusal: SpendRefusal,
    ended_at: _dt.datetime,
    exit_code: int | None,
    usage: Usage,
) -> tuple[TaskRecord, AttemptEnd]:
    """End attempt ``number``, whose request ``refusal`` refused, failed
    (``REQUEST_BUDGET_CODE``) and its task ``paused`` with the refusal's
    ``budget_exceeded`` reason, in one transaction; the task as stored and the end."""
    failure = Failure(code=REQUEST_BUDGET_CODE, message=refusal.reason)
    end = AttemptEnd(
        number=number,
        outcome=AttemptOutcome.FAILED,
        ended_at=ended_at,
        failure=failure,
        exit_code=exit_code,
        usage=usage,
    )
    change = StateChange(state=TaskState.PAUSED, reason=refusal.reason, at=ended_at)
    record, _ = store.end_attempt(operation_id, end, change)
    return record, end
