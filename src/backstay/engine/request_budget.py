"""``AttemptBudget``: a task's spending budgets, asked for each request an agent CLI's
attempt makes through the in-process gateway (``backstay.gateway.runs.RequestBudget``).

The attempt's estimate is reserved before it begins (``BudgetGate``); inside it, each
request the CLI sends is admitted only if the budgets still have room for it, counting
what the attempt's answers used so far and the requests in flight in place of the
attempt's reservation:

    spent + reserved by the others + used so far + in flight + this request ≤ limit

for every scope of the task (task, tenant, batch) and each of USD and tokens that is
limited (``check_spend``'s rule). A request's estimate is its prompt's estimated tokens
(``policy._paced.estimate_tokens(output=False)``: an agent's requests set output limits
far above what they answer, so a request is refused once the budgets cannot hold its
prompt, and the overshoot is at most the output of the requests in flight); an answer
charges the tokens it reported, and both are priced as the attempt is charged
(``adapters.spend.charge_spend``: at the adapter's known price, else no USD). The first
refusal is kept (``refusal``): the gateway answers the request with a 400 naming the
budget, the CLI stops, and the driver ends the task ``paused`` with the refusal's
``budget_exceeded`` reason (``stop_attempt``), as a refused attempt is paused.

Called on the gateway's thread (a lock guards the counts; the ledger is thread-safe).
Other attempts in flight are counted at their reservations until they settle.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import threading
from typing import Final

from backstay.adapters.contract import Adapter
from backstay.adapters.spend import charge_spend
from backstay.adapters.usage import Usage
from backstay.engine.budgets import BudgetGate
from backstay.engine.records import AttemptEnd, AttemptOutcome, StateChange, TaskRecord
from backstay.engine.spend_ledger import AttemptSpend
from backstay.engine.states import TaskState
from backstay.engine.task import TaskSpec
from backstay.engine.taskstore import TaskStore
from backstay.failure import Failure
from backstay.idempotency.ids import attempt_id as make_attempt_id
from backstay.policy.spend import ScopeKind, Spend, SpendRefusal, check_spend

__all__ = ["REQUEST_BUDGET_CODE", "AttemptBudget", "stop_attempt"]

# The failure of an attempt whose request a budget refused (the run reached its budget).
REQUEST_BUDGET_CODE: Final = "ERR_LIMIT_BUDGET"


def _less(a: Spend, b: Spend) -> Spend:
    return Spend(usd=max(0.0, a.usd - b.usd), tokens=max(0, a.tokens - b.tokens))


class AttemptBudget:
    """Attempt ``number`` of ``spec`` on ``adapter`` (its candidate's), as its requests
    see the budgets of ``gate``; see the module docstring."""

    def __init__(self, gate: BudgetGate, spec: TaskSpec, adapter: Adapter, number: int) -> None:
        self._gate = gate
        self._spec = spec
        self._adapter = adapter
        self._attempt = AttemptSpend(
            attempt_id=make_attempt_id(spec.operation_id, number),
            operation_id=spec.operation_id,
            tenant=spec.tenant,
            adapter=spec.adapter,
            model=spec.model,
            task_budget=spec.budget,
            estimate=Spend(),
        )
        self._held = gate.held(spec, number)
        self._lock = threading.Lock()
        self._used = Spend()
        self._in_flight = Spend()
        self.refusal: SpendRefusal | None = None

    def _spend(self, usage: Usage) -> Spend:
        spec = self._spec
        return charge_spend(
            self._adapter, model=spec.model, config=spec.config, usage=usage, estimate=Spend()
        )

    def _estimate(self, tokens: float) -> Spend:
        return self._spend(Usage(input_tokens=math.ceil(max(0.0, tokens))))

    def admit(self, tokens: float) -> str | None:
        """Hold a request of ``tokens`` estimated tokens, or the reason it has no room."""
        estimate = self._estimate(tokens)
        with self._lock:
            if self.refusal is not None:
                return self._message(self.refusal)
            refusal = self._check(estimate)
            if refusal is not None:
                self.refusal = refusal
                return self._message(refusal)
            self._in_flight = self._in_flight + estimate
        return None

    def release(self, tokens: float) -> None:
        """A request admitted with ``tokens`` is done: its hold is let go."""
        estimate = self._estimate(tokens)
        with self._lock:
            self._in_flight = _less(self._in_flight, estimate)

    def charge(self, usage: object) -> None:
        """Count what one answer used (a ``TokenUsage``)."""
        answered = Usage(
            input_tokens=int(getattr(usage, "input_tokens", 0)),
            output_tokens=int(getattr(usage, "output_tokens", 0)),
            cache_read_tokens=int(getattr(usage, "cache_read_tokens", 0)),
            cache_write_tokens=int(getattr(usage, "cache_write_tokens", 0)),
        )
        spent = self._spend(answered)
        with self._lock:
            self._used = self._used + spent

    def _check(self, estimate: Spend) -> SpendRefusal | None:
        """The rule of the module docstring, the attempt's own reservation taken out."""
        ledger, attempt = self._gate.ledger, self._attempt
        own = self._used + self._in_flight
        totals = []
        for scope in attempt.scopes():
            task_budget = attempt.task_budget if scope.kind is ScopeKind.TASK else None
            found = ledger.totals(scope, task_budget)
            totals.append(
                dataclasses.replace(
                    found, spent=found.spent + own, reserved=_less(found.reserved, self._held)
                )
            )
        return check_spend(totals, estimate)

    def _message(self, refusal: SpendRefusal) -> str:
        reason = refusal.reason.replace("the next attempt", "the next request of its run")
        return f"{reason}; task {self._spec.task_id} stops here and is paused"


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
