"""``TaskDriver``: one task's attempts — record, dispatch, classify, decide, record, sleep.

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

With a ``CircuitGate``, step 1 waits for a permit first: while the task's circuit is open
the driver records a wait (the circuit log, ``task.deferred``), sleeps the circuit's
remaining open time and asks again. Waiting is not an attempt: nothing is begun, no
attempt is counted. The attempt's end is reported on the permit (success, its
``Failure``, or a release when it never ended), which is how circuits open and close.

``drive`` returns the result of a task that succeeded (recorded before it returns) and
raises ``TaskStopped`` for any other end, so the guard caches only successes.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from pathlib import Path
from typing import Any, Final

from backstay.adapters.capture import Capture
from backstay.adapters.contract import TIMEOUT_EXIT_CODE, Adapter, AgentResult
from backstay.adapters.orphans import attempt_tag, stop_tagged
from backstay.adapters.usage import Usage
from backstay.classify import classify
from backstay.clock import Clock
from backstay.engine import _notify as notify
from backstay.engine.circuits import CircuitGate
from backstay.engine.decision import draw_for, next_step
from backstay.engine.records import (
    AttemptEnd,
    AttemptOutcome,
    NewEscalation,
    StateChange,
    TaskRecord,
)
from backstay.engine.resume import StartStep, plan_start
from backstay.engine.states import InvalidTransition, TaskState
from backstay.engine.task import TaskSpec
from backstay.engine.taskstore import TaskStore
from backstay.errors import AdapterError, CircuitOpen
from backstay.failure import Failure
from backstay.idempotency.ids import attempt_id as make_attempt_id
from backstay.policy.protocols import Permit
from backstay.policy.retry import RetryPolicy
from backstay.redact import redact
from backstay.taxonomy import FailureKind

__all__ = ["TaskDriver", "TaskStopped"]

# How much of a failed attempt's partial output an escalation keeps for its reader.
_CONTEXT_OUTPUT_CHARS: Final = 2000
# How long to wait when a half-open circuit has every probe out (no time to wait for is
# known): the probes' ends decide, so ask again soon.
PROBES_OUT_WAIT_S: Final = 1.0
# The shortest wait for an open circuit: a circuit due to half-open "now" is asked again
# after this, never in a tight loop.
_MIN_CIRCUIT_WAIT_S: Final = 0.05


class TaskStopped(Exception):
    """The task ended other than in success (failed, paused, escalated, cancelled, or
    not runnable now); ``record`` is how the store has it."""

    def __init__(self, record: TaskRecord) -> None:
        self.record = record
        super().__init__(f"task {record.operation_id!r} is {record.state}: {record.reason}")


@dataclasses.dataclass(frozen=True, slots=True)
class _Attempt:
    """What one dispatch produced."""

    result: AgentResult | None
    failure: Failure | None
    partial_output: str | None
    usage: Usage
    exit_code: int | None


def _result_data(result: AgentResult, usage: Usage) -> dict[str, Any]:
    return {
        "output": result.output,
        "usage": dataclasses.asdict(usage),
        "exit_code": result.exit_code,
        "duration_s": round(result.duration_s, 3),
        "artefacts": [str(p) for p in result.artefacts],
    }


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
    ) -> None:
        self.spec = spec
        self.adapter = adapter
        self.policy = policy
        self.store = store
        self.clock = clock
        self.state_dir = state_dir
        self.circuits = circuits
        self.operation_id = spec.operation_id
        # Whether this driver found or made the task succeeded in the store.
        self.succeeded = False

    async def drive(self) -> dict[str, Any]:
        """Take the task up as ``plan_start`` says, then attempt until it ends."""
        record = self._take_up()
        if record.state is TaskState.SUCCEEDED:
            self.succeeded = True
            return dict(record.result or {})
        wait = plan_start(record, self.clock.now()).wait_s
        if wait > 0.0:
            await self.clock.asleep(wait)
        while True:
            permit = await self._admitted(record)
            try:
                record, delay = await self._attempt(record, permit)
            except BaseException:
                if permit is not None:  # nothing reported: the attempt never ended
                    permit.release()
                raise
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
        record = self._record()
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

    def _record(self) -> TaskRecord:
        record = self.store.task(self.operation_id)
        if record is None:
            raise LookupError(f"task {self.operation_id!r} was never registered")
        return record

    async def _admitted(self, record: TaskRecord) -> Permit | None:
        """A permit of the task's circuit (``None`` without a gate), after waiting out an
        open circuit: each wait is recorded before it is slept."""
        gate = self.circuits
        if gate is None:
            return None
        while True:
            try:
                return gate.acquire(self.spec)
            except CircuitOpen as refused:
                after = refused.retry_after_s
                wait = max(PROBES_OUT_WAIT_S if after is None else after, _MIN_CIRCUIT_WAIT_S)
                gate.waited(self.spec, breaker=refused.name, wait_s=wait, at=self.clock.now())
                notify.deferred(record, breaker=refused.name, wait_s=wait, policy=self.policy.name)
                await self.clock.asleep(wait)

    async def _attempt(self, record: TaskRecord, permit: Permit | None) -> tuple[TaskRecord, float]:
        """One attempt, recorded before and after; the task as stored and the delay. The
        attempt's end is reported on ``permit`` as soon as it is known."""
        number = record.attempts_used + 1
        attempt_id = make_attempt_id(self.operation_id, number)
        output_dir = self.spec.attempt_dir(self.state_dir, number)
        started_at = self.clock.now()
        record = self.store.begin_attempt(
            self.operation_id,
            number=number,
            attempt_id=attempt_id,
            output_dir=str(output_dir),
            at=started_at,
        )
        notify.started(record, attempt_id=attempt_id, policy=self.policy.name)
        done = await self._dispatch(output_dir, attempt_id, started_at)
        ended_at = self.clock.now()
        if permit is not None:
            if done.result is not None:
                permit.success()
            elif done.failure is not None:
                permit.failure(done.failure)
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
                result=_result_data(done.result, done.usage),
            )
            record, _ = self.store.end_attempt(self.operation_id, end, change)
            self._ended(record, end, attempt_id, started_at)
            notify.succeeded(record, policy=self.policy.name)
            return record, 0.0
        assert done.failure is not None  # noqa: S101 - a dispatch gives a result or a failure
        return self._failed(record, done, ended_at, number, str(output_dir), started_at=started_at)

    def _ended(
        self, record: TaskRecord, end: AttemptEnd, attempt_id: str, started_at: _dt.datetime
    ) -> None:
        duration = (end.ended_at - started_at).total_seconds()
        notify.attempt_ended(
            record, end, attempt_id=attempt_id, duration_s=duration, policy=self.policy.name
        )

    async def _dispatch(
        self, output_dir: Path, attempt_id: str, started_at: _dt.datetime
    ) -> _Attempt:
        request = self.spec.request(output_dir)
        started = self.clock.monotonic()
        with Capture(output_dir) as capture:
            result: AgentResult | None = None
            failure: Failure | None = None
            partial: str | None = None
            try:
                result = await self.adapter.dispatch(
                    request, operation_id=self.operation_id, attempt_id=attempt_id, capture=capture
                )
            except AdapterError as err:
                failure, partial = err.failure, err.partial_output
            except Exception as exc:  # noqa: BLE001 - outside the contract: classified, not fatal
                failure = classify(exc)
            usage = result.usage if result is not None else capture.usage
            exit_code = result.exit_code if result is not None else capture.exit_code
            capture.write_metrics(
                usage=usage,
                duration_s=self.clock.monotonic() - started,
                exit_code=_exit_status(result, failure, exit_code),
                failure=failure,
                started_at=started_at,
                ended_at=self.clock.now(),
                durable=False,  # state.sqlite holds the attempt durably; this is its view
            )
        return _Attempt(result, failure, partial, usage, exit_code)

    def _failed(
        self,
        record: TaskRecord,
        done: _Attempt,
        ended_at: _dt.datetime,
        number: int,
        output: str,
        *,
        started_at: _dt.datetime,
    ) -> tuple[TaskRecord, float]:
        failure = done.failure
        assert failure is not None  # noqa: S101 - only failed attempts come here
        step = next_step(
            self.policy,
            failure,
            record=record,
            attempts=self.store.attempts(self.operation_id),
            ended_at=ended_at,
            draw=draw_for(self.policy, self.operation_id, number),
        )
        escalation = None
        if step.escalate:
            context = self._context(done, number, output, step.reason)
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
        record, added = self.store.end_attempt(
            self.operation_id, end, change, escalation=escalation
        )
        delay = step.delay_s or 0.0
        self._ended(record, end, make_attempt_id(self.operation_id, number), started_at)
        notify.after_failure(record, failure, added, policy=self.policy.name, delay_s=delay)
        return record, delay

    def _context(self, done: _Attempt, number: int, output_dir: str, reason: str) -> dict[str, Any]:
        partial = redact(done.partial_output or "")[-_CONTEXT_OUTPUT_CHARS:]
        return {
            "task_id": self.spec.task_id,
            "adapter": self.spec.adapter,
            "model": self.spec.model,
            "attempt": number,
            "reason": reason,
            "output_dir": output_dir,
            "exit_code": done.exit_code,
            "partial_output": partial,
        }


def _exit_status(result: AgentResult | None, failure: Failure | None, exit_code: int | None) -> int:
    """What ``metrics.json`` reports, as a harness does: 0, 124 on timeout, else the
    agent's own non-zero code or 1."""
    if result is not None:
        return 0
    if failure is not None and failure.kind is FailureKind.TIMEOUT:
        return TIMEOUT_EXIT_CODE
    return exit_code or 1
