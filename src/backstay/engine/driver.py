"""``TaskDriver``: one task's attempts — record, dispatch, classify, decide, record, sleep.

(About 570 lines: the file is the ``TaskDriver`` class, whose attempt loop with its gates,
budgets and records reads as one; its decisions live in ``decision``, ``budgets`` and
``circuits``.)

The engine runs ``drive()`` while it holds the task's operation lease, so no other runner
touches the task meanwhile. Each attempt:

1. ``begin_attempt``: the task is ``running`` attempt N, in the store, BEFORE dispatch;
2. dispatch through the adapter, capturing into ``runs/<task>/<tier>/run_NN/attempt_N/``;
3. an ``AdapterError`` gives its ``Failure``; any other exception is classified
   (``backstay.classify``); ``metrics.json`` is written for the attempt;
4. ``decision.next_step`` (the policy's decision and ``outcome_for``) gives the next
   state, and whether a human gets an escalation record;
5. ``end_attempt`` records all of that in one transaction BEFORE any event or sleep;
6. retrying: sleep the recorded delay on the clock, and go to 1.

With a ``CircuitGate``, step 1 waits for a permit first (``CircuitGate.admit``): while
the task's circuit is open it records a wait (the circuit log, ``task.deferred``), sleeps
the circuit's remaining open time and asks again. Waiting is not an attempt: nothing is begun, no
attempt is counted. The attempt's end is reported on the permit (success, its
``Failure``, or a release when it never ended), which is how circuits open and close.

With a ``BudgetGate``, the attempt's estimated spend is reserved after the permit and
before step 1; when a budget has no room the task is paused (``budget_exceeded``) without
an attempt, and the permit is given back (a refusal is no failure of the candidate). The
real use is charged right after the dispatch (docs/budgets.md). Where the stores offer an
``AttemptSpendStore`` (SQLite) and the task has no pacing, the reservation is written in
step 1's transaction and the charge in step 5's instead of transactions of their own.
Through the gateway, each request of an agent CLI's attempt is held against the budgets too
(``engine.request_budget``): one they have no room for is refused, and the attempt ends
failed with its task paused (``budget_exceeded``).

``drive`` returns the result of a task that succeeded (recorded before it returns) and
raises ``TaskStopped`` for any other end, so the guard caches only successes.

A task with ``fallbacks`` has a ``TaskFallback`` (``backstay.engine.fallback``) instead:
it admits each attempt on the candidate it chooses, gives its adapter and request, and
decides step 4 (``step_after``: a move at once to another candidate, or ``next_step``).
A budget estimates and charges each attempt as its candidate (``attempt_target``: that
candidate's adapter, model and settings).

With a ``Pacing`` (``backstay.engine.pacing``: ``retry.rate_limits`` and ``retry.budget``),
an attempt whose adapter or provider has a rate limit first reserves at its limiter and
sleeps the reservation's wait (before step 1, so the wait is no part of the attempt), and
the limiter is told how the attempt ended (a 429's wait blocks it). The task's first
attempt records a call at the retry budget; a retry is taken from the budget before it
is recorded, and a refused one fails the task instead (``retry_budget_exhausted``).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from backstay.adapters.cli.orphans import attempt_tag, stop_tagged
from backstay.adapters.contract import Adapter, AgentRequest
from backstay.adapters.gateway_wiring import (
    gateway_fallback,
    use_fallback_model,
    use_request_budget,
)
from backstay.clock import Clock
from backstay.engine import _notify as notify
from backstay.engine._attempt_done import AttemptDone, dispatch, escalation_context, result_data
from backstay.engine.attempt_spend import AttemptSpendStore, Settlement
from backstay.engine.attempt_start import AttemptStarts
from backstay.engine.budgets import BudgetGate, estimate_attempt, paused_by_budget
from backstay.engine.circuits import CircuitGate
from backstay.engine.decision import draw_for, retry_refused
from backstay.engine.fallback import TaskFallback, attempt_target, model_keys, step_after
from backstay.engine.pacing import RETRY_BUDGET_EXHAUSTED, Pacing
from backstay.engine.records import (
    AttemptEnd,
    AttemptOutcome,
    Escalation,
    NewEscalation,
    StateChange,
    TaskRecord,
)
from backstay.engine.request_budget import AttemptBudget, stop_attempt
from backstay.engine.resume import StartStep, plan_start
from backstay.engine.states import InvalidTransition, TaskState
from backstay.engine.task import TaskSpec
from backstay.engine.task import attempt_id as make_attempt_id
from backstay.engine.taskstore import TaskStore
from backstay.idempotency.guard import held_lease
from backstay.policy.protocols import Permit, RateLimiterLike, ReservationLike
from backstay.policy.retry import RetryPolicy
from backstay.policy.spend import SpendRefusal
from backstay.store.location import StoreLocation
from backstay.taxonomy import FailureKind

__all__ = ["TaskDriver", "TaskStopped"]


class TaskStopped(Exception):
    """The task ended other than in success (failed, paused, escalated, cancelled, or
    not runnable now); ``record`` is how the store has it."""

    def __init__(self, record: TaskRecord) -> None:
        self.record = record
        super().__init__(f"task {record.operation_id!r} is {record.state}: {record.reason}")


class TaskDriver:
    """Runs ``spec``'s attempts through ``adapter`` under ``policy``."""

    def __init__(
        self,
        spec: TaskSpec,
        *,
        adapter: Adapter,
        policy: RetryPolicy,
        store: TaskStore,
        clock: Clock,
        state_dir: Path,
        circuits: CircuitGate | None = None,
        budgets: BudgetGate | None = None,
        fallback: TaskFallback | None = None,
        pacing: Pacing | None = None,
        location: StoreLocation | None = None,
        attempt_spend: AttemptSpendStore | None = None,
    ) -> None:
        self.spec = spec
        # Where the batch's records are: every request of the task carries it.
        self.location = location or StoreLocation.sqlite(state_dir)
        self.adapter = adapter
        self.policy = policy
        self.store = store
        self.clock = clock
        self.state_dir = state_dir
        self.circuits = circuits
        self.budgets = budgets
        self.fallback = fallback  # the task's chain, when it has fallbacks
        self.pacing = pacing
        # With budgets and no pacing, each attempt's reservation and settlement are written
        # in the transactions that begin and end it (``engine.attempt_spend``).
        self.joint = attempt_spend if budgets is not None and pacing is None else None
        self.operation_id = spec.operation_id
        # An agent CLI's workspace snapshot and session home (attempt_start).
        self.starts = AttemptStarts(spec, state_dir=state_dir, policy=policy.name)
        # Whether this driver found or made the task succeeded in the store.
        self.succeeded = False
        # The task as its runner read it just before it claimed the operation's lease:
        # taken up as it is when that lease is the operation's first (``_first_read``).
        self.read_before: TaskRecord | None = None

    async def drive(self) -> dict[str, Any]:
        """Take the task up as ``plan_start`` says, then attempt until it ends. An
        operator's cancel (``backstay cancel``) recorded meanwhile makes the next move
        refused: the task stops there (``TaskStopped``), whatever the attempt did."""
        try:
            return await self._drive()
        except InvalidTransition:
            record = self._record()
            if record.state is TaskState.CANCELLED:
                raise TaskStopped(record) from None
            raise

    async def _drive(self) -> dict[str, Any]:
        record = self._take_up()
        if record.state is TaskState.SUCCEEDED:
            self.succeeded = True
            return dict(record.result or {})
        wait = plan_start(record, self.clock.now()).wait_s
        if wait > 0.0:
            await self.clock.asleep(wait)
        while True:
            permit = await self._admitted(record)
            if self.budgets is not None and self.joint is None:
                spec, adapter = attempt_target(self.spec, self.adapter, self.fallback)
                held = await self.budgets.hold(
                    self.store, record, spec, adapter, permit, policy=self.policy.name
                )
                if isinstance(held, TaskRecord):  # paused: no room for the attempt
                    raise TaskStopped(held)
                if not held:  # waited for this runner's attempts in flight: ask again
                    continue
            paced = await self._paced()
            try:
                attempted = await self._attempt(record, permit, paced)
            except BaseException:
                if permit is not None:  # nothing reported: the attempt never ended
                    permit.release()
                if paced is not None:
                    Pacing.attempt_ended(*paced, None)
                raise
            if isinstance(attempted, SpendRefusal):  # not begun: no room in a budget
                assert self.budgets is not None  # noqa: S101 - only a budget refuses
                held = await self.budgets.refused(
                    self.store, record, attempted, permit, policy=self.policy.name
                )
                if isinstance(held, TaskRecord):  # paused
                    raise TaskStopped(held)
                continue
            record, delay = attempted
            if record.state is TaskState.SUCCEEDED:
                self.succeeded = True
                return dict(record.result or {})
            if record.state is not TaskState.RETRYING:
                raise TaskStopped(record)
            if delay > 0.0:
                await self.clock.asleep(delay)

    def _take_up(self) -> TaskRecord:
        """The stored task, requeued or recovered as needed; ``TaskStopped`` if it is not
        to run now (a succeeded one is returned as it is)."""
        record = self._first_read()
        while True:
            now = self.clock.now()
            plan = plan_start(record, now)
            if plan.step is StartStep.SKIP:
                if record.state is TaskState.SUCCEEDED:
                    return record
                raise TaskStopped(record)
            if plan.step is StartStep.RUN:
                return record
            previous = record.state
            if paused_by_budget(record) and not self._budget_admits(record):
                raise TaskStopped(record)
            try:
                if plan.step is StartStep.REQUEUE:
                    change = StateChange(state=TaskState.PENDING, reason=plan.reason, at=now)
                    record = self.store.change_state(
                        self.operation_id, change, close_escalations=plan.reason
                    )
                else:
                    killed = self._stop_left_over_processes()
                    record = self.store.recover_interrupted(
                        self.operation_id, at=now, killed=killed
                    )
                    if self.budgets is not None:
                        self.budgets.recover(self.operation_id)
            except InvalidTransition:  # a human's decision moved it meanwhile: plan again
                record = self._record()
                continue
            notify.resumed(record, previous=previous, policy=self.policy.name)

    def _stop_left_over_processes(self) -> int:
        """Kill what the attempts recorded running still have alive: their runner died
        (this driver holds the operation's lease), so nothing else owns them."""
        return sum(
            len(stop_tagged(attempt_tag(a.output_dir)))
            for a in self.store.attempts(self.operation_id)
            if a.outcome is AttemptOutcome.RUNNING
        )

    def _first_read(self) -> TaskRecord:
        """The task as stored when its lease was claimed: ``read_before`` when the lease
        is the operation's first (no runner can have run the task since it was read: each
        claims the lease first), else read again."""
        before, self.read_before = self.read_before, None
        lease = held_lease()
        if (
            before is not None
            and lease is not None
            and lease.generation == 1
            and lease.operation_id == self.operation_id
        ):
            return before
        return self._record()

    def _record(self) -> TaskRecord:
        record = self.store.task(self.operation_id)
        if record is None:
            raise LookupError(f"task {self.operation_id!r} was never registered")
        return record

    async def _admitted(self, record: TaskRecord) -> Permit | None:
        """A permit of the task's circuit (``None`` without a gate), after waiting out an
        open circuit: each wait is recorded before it is slept."""
        if self.fallback is not None:
            return await self.fallback.admit(record, store=self.store, policy=self.policy.name)
        if self.circuits is None:
            return None
        return await self.circuits.admit(
            self.spec, record, clock=self.clock, policy=self.policy.name
        )

    # -- spending budgets (docs/budgets.md) --------------------------------------------

    def _budget_admits(self, record: TaskRecord) -> bool:
        """Whether the budgets that paused ``record`` now have room for its next attempt,
        on the candidate the chain would choose for it."""
        if self.budgets is None:
            return False
        attempts = self.store.attempts(self.operation_id)
        index = None if self.fallback is None else self.fallback.upcoming(record, attempts)
        spec, adapter = attempt_target(self.spec, self.adapter, self.fallback, index)
        return self.budgets.admits(spec, adapter, record.attempts_used + 1)

    async def _paced(self) -> tuple[RateLimiterLike, ReservationLike] | None:
        """The limiter of the coming attempt and its reservation, waited out; ``None``
        when the attempt's adapter has no rate limit."""
        if self.pacing is None:
            return None
        spec, adapter = attempt_target(self.spec, self.adapter, self.fallback)
        limiter = self.pacing.limiter(spec, adapter)
        if limiter is None:
            return None
        settings = getattr(limiter, "settings", None)
        tokens = 1.0  # the attempt's estimate only where tokens are limited
        if getattr(settings, "tokens_per_minute", None) is not None:
            tokens = float(estimate_attempt(spec, adapter, None).tokens)
        return limiter, await self.pacing.wait_turn(limiter, tokens)

    def _lengthened(self, request: AgentRequest) -> AgentRequest:
        """``request`` with its timeout × ``timeout_factor`` per earlier timed-out attempt."""
        timeouts = sum(
            1
            for a in self.store.attempts(self.operation_id)
            if a.failure is not None and a.failure.kind is FailureKind.TIMEOUT
        )
        if timeouts == 0:
            return request
        factor = self.policy.timeout_factor**timeouts
        return dataclasses.replace(request, timeout_s=request.timeout_s * factor)

    async def _attempt(
        self,
        record: TaskRecord,
        permit: Permit | None,
        paced: tuple[RateLimiterLike, ReservationLike] | None = None,
    ) -> tuple[TaskRecord, float] | SpendRefusal:
        """One attempt, recorded before and after; the task as stored and the delay. The
        attempt's end is reported on ``permit`` (and its limiter, ``paced``) as soon as it
        is known. With ``joint``, the attempt's reservation is written as it is begun, and
        a refusal returned instead when a budget has no room (nothing begun)."""
        number = record.attempts_used + 1
        if number == 1 and self.pacing is not None:
            self.pacing.first_attempt()
        attempt_id = make_attempt_id(self.operation_id, number)
        output_dir = self.spec.attempt_dir(self.state_dir, number)
        started_at = self.clock.now()
        begun = self._begin(number, attempt_id, str(output_dir), started_at)
        if isinstance(begun, SpendRefusal):
            return begun
        record = begun
        keys = model_keys(self.spec, self.fallback)  # the candidate this attempt runs on
        notify.started(record, attempt_id=attempt_id, policy=self.policy.name, keys=keys)
        adapter, request = self.adapter, self.spec.request(output_dir, store=self.location)
        if self.policy.timeout_factor > 1.0:
            request = self._lengthened(request)
        if self.fallback is not None:
            adapter, request = self.fallback.target(adapter, output_dir)
            request = dataclasses.replace(request, store=self.location)
        earlier = self.store.attempts(self.operation_id) if number > 1 else ()  # none before 1
        request, start = self.starts.prepare(adapter, request, number=number, attempts=earlier)
        # Through a gateway, its requests move to the next candidate's model of the same
        # provider while their own model's circuit is open, and each is held against the
        # task's spending budgets (engine.request_budget).
        current = 0 if self.fallback is None else self.fallback.current
        budget = None
        if self.budgets is not None:
            spec, target = attempt_target(self.spec, self.adapter, self.fallback)
            budget = AttemptBudget(self.budgets, spec, target, number)
        with (
            use_fallback_model(gateway_fallback(self.spec.candidates, current)),
            use_request_budget(budget),
        ):
            done = await dispatch(
                adapter,
                request,
                operation_id=self.operation_id,
                attempt_id=attempt_id,
                clock=self.clock,
                started_at=started_at,
                metrics=keys if start is None else {**keys, "attempt_start": str(start)},
            )
        ended_at = self.clock.now()
        if paced is not None:
            Pacing.attempt_ended(*paced, done.failure, headers=done.rate_limit_headers)
        if permit is not None:
            if done.result is not None:
                permit.success()
            elif done.failure is not None:
                permit.failure(done.failure)
        stopped = done.result is None and budget is not None and budget.refusal is not None
        settlement = self._charge(number, done, written=stopped)
        if stopped and budget is not None and budget.refusal is not None:
            return self._stopped_by_budget(
                done, ended_at, number, budget.refusal, started_at=started_at, keys=keys
            )
        if done.result is not None:
            end = AttemptEnd(
                number=number,
                outcome=AttemptOutcome.SUCCEEDED,
                ended_at=ended_at,
                exit_code=done.exit_code,
                usage=done.usage,
            )
            change = StateChange(
                state=TaskState.SUCCEEDED,
                reason=f"succeeded on attempt {number}",
                at=ended_at,
                result=result_data(done.result, done.usage, keys),
            )
            record, _ = self._end(end, change, None, settlement)
            if start is not None:
                self.starts.finished()
            notify.attempt_ended(record, end, attempt_id, started_at, keys, policy=self.policy.name)
            notify.succeeded(record, policy=self.policy.name)
            return record, 0.0
        assert done.failure is not None  # noqa: S101 - a dispatch gives a result or a failure
        return self._failed(
            record,
            done,
            ended_at,
            number,
            str(output_dir),
            started_at=started_at,
            keys=keys,
            settlement=settlement,
        )

    def _charge(self, number: int, done: AttemptDone, *, written: bool) -> Settlement | None:
        """What attempt ``number`` is charged, to be written as it ends (``_end``); written
        now (``None``) without ``joint``, or when ``written``."""
        if self.budgets is None:
            return None
        spec, adapter = attempt_target(self.spec, self.adapter, self.fallback)
        settlement = self.budgets.charge(spec, adapter, number, done.usage)
        if self.joint is not None and not written:
            return settlement
        self.budgets.record(settlement)
        return None

    def _begin(
        self, number: int, attempt_id: str, output_dir: str, started_at: _dt.datetime
    ) -> TaskRecord | SpendRefusal:
        """``begin_attempt``; with ``joint``, the attempt's estimate reserved in its
        transaction, or the refusal (nothing begun)."""
        candidate = None if self.fallback is None else self.fallback.current_name
        if self.joint is None or self.budgets is None:
            return self.store.begin_attempt(
                self.operation_id,
                number=number,
                attempt_id=attempt_id,
                output_dir=output_dir,
                at=started_at,
                candidate=candidate,
            )
        spec, target = attempt_target(self.spec, self.adapter, self.fallback)
        spend = self.budgets.attempt(spec, target, number)
        begun = self.joint.begin_reserved(
            self.operation_id,
            number=number,
            attempt_id=attempt_id,
            output_dir=output_dir,
            at=started_at,
            candidate=candidate,
            spend=spend,
        )
        if not isinstance(begun, SpendRefusal):
            self.budgets.reserved(spend)
        return begun

    def _end(
        self,
        end: AttemptEnd,
        change: StateChange,
        escalation: NewEscalation | None,
        settlement: Settlement | None,
    ) -> tuple[TaskRecord, Escalation | None]:
        """``end_attempt``, with ``settlement`` written in its transaction when there is
        one; should the end be refused (an operator's cancel meanwhile), the charge is
        written on its own, so no reservation stays open."""
        if settlement is None or self.joint is None or self.budgets is None:
            return self.store.end_attempt(self.operation_id, end, change, escalation=escalation)
        try:
            ended = self.joint.end_settled(
                self.operation_id, end, change, escalation=escalation, settlement=settlement
            )
        except BaseException:
            self.budgets.record(settlement)
            raise
        self.budgets.settled_now()
        return ended

    def _stopped_by_budget(
        self,
        done: AttemptDone,
        ended_at: _dt.datetime,
        number: int,
        refusal: SpendRefusal,
        *,
        started_at: _dt.datetime,
        keys: Mapping[str, str],
    ) -> tuple[TaskRecord, float]:
        """The attempt whose run's request a budget refused: failed, the task paused."""
        record, end = stop_attempt(
            self.store,
            self.operation_id,
            number=number,
            refusal=refusal,
            ended_at=ended_at,
            exit_code=done.exit_code,
            usage=done.usage,
        )
        attempt_id = make_attempt_id(self.operation_id, number)
        notify.attempt_ended(record, end, attempt_id, started_at, keys, policy=self.policy.name)
        if self.budgets is not None:
            self.budgets.told(record, refusal, attempt=number, policy=self.policy.name)
        return record, 0.0

    def _failed(
        self,
        record: TaskRecord,
        done: AttemptDone,
        ended_at: _dt.datetime,
        number: int,
        output: str,
        *,
        started_at: _dt.datetime,
        keys: Mapping[str, str],
        settlement: Settlement | None = None,
    ) -> tuple[TaskRecord, float]:
        failure = done.failure
        assert failure is not None  # noqa: S101 - only failed attempts come here
        if self.fallback is not None:  # marked when an agent changed its workspace
            failure = self.fallback.checked(failure)
        step, moved_to = step_after(
            self.fallback,
            self.policy,
            failure,
            record=record,
            attempts=self.store.attempts(self.operation_id),
            ended_at=ended_at,
            draw=draw_for(self.policy, self.operation_id, number),
        )
        if (
            moved_to is None
            and step.state is TaskState.RETRYING
            and self.pacing is not None
            and not self.pacing.allows_retry()
        ):
            step = retry_refused(step, failure, reason=RETRY_BUDGET_EXHAUSTED)
        escalation = None
        if step.escalate:
            context = escalation_context(
                self.spec, self.fallback, done, number=number, output_dir=output, reason=step.reason
            )
            escalation = NewEscalation(failure=failure, context=context)
        end = AttemptEnd(
            number=number,
            outcome=AttemptOutcome.FAILED,
            ended_at=ended_at,
            failure=failure,
            delay_s=step.delay_s,
            exit_code=done.exit_code,
            usage=done.usage,
        )
        change = StateChange(
            state=step.state, reason=step.reason, at=ended_at, next_run_at=step.next_run_at
        )
        record, added = self._end(end, change, escalation, settlement)
        delay = step.delay_s or 0.0
        attempt_id = make_attempt_id(self.operation_id, number)
        notify.attempt_ended(record, end, attempt_id, started_at, keys, policy=self.policy.name)
        if moved_to is not None and self.fallback is not None:
            self.fallback.fell_back(record, failure, target=moved_to, policy=self.policy.name)
        notify.after_failure(record, failure, added, policy=self.policy.name, delay_s=delay)
        return record, delay
