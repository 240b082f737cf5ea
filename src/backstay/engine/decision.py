"""What a failed attempt leaves the task in: the policy's decision, mapped to a state.

``next_step`` is pure: the retry policy decides (``backstay.policy.decide``) from the
failure (its Retry-After included), the attempt number within the current retry budget,
the time since that budget's first attempt began and the previous delay, all read from
the stored attempts, so a resumed task decides exactly as an uninterrupted one would.
``outcome_for`` maps the decision to a state; then:

* a retry runs again at ``ended_at + delay_s``;
* a quota pauses the task until ``resets_at`` (``None``: until a human resumes it);
* a failure that escalates (auth, security) waits in ``escalated`` for a human instead of
  failing for good: ``fail`` is one of the human's choices; a content policy failure
  fails with its escalation open for review (a ``retry`` decision re-opens the task);
* a give-up other than "not retryable" is named in the reason (``attempts_exhausted``…);
* a retry the engine's retry budget refuses (``retry_refused``) fails the task, the
  reason naming ``retry_budget_exhausted``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Sequence

from backstay.clock import seeded_unit, unseeded_unit
from backstay.engine.records import AttemptRecord, TaskRecord
from backstay.engine.states import TaskState, outcome_for
from backstay.failure import Failure
from backstay.policy.retry import GiveUpReason, RetryPolicy, decide
from backstay.taxonomy import FailureKind

__all__ = ["NextStep", "draw_for", "next_step", "retry_refused"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NextStep:
    """The task's next state after a failed attempt. ``delay_s`` is set only for a retry."""

    state: TaskState
    reason: str
    next_run_at: _dt.datetime | None
    delay_s: float | None
    escalate: bool


def draw_for(policy: RetryPolicy, operation_id: str, number: int) -> float:
    """The jitter draw of attempt ``number``: reproducible when the policy has a seed."""
    if policy.seed is None:
        return unseeded_unit()
    return seeded_unit(policy.seed, operation_id, number)


def next_step(
    policy: RetryPolicy,
    failure: Failure,
    *,
    record: TaskRecord,
    attempts: Sequence[AttemptRecord],
    ended_at: _dt.datetime,
    draw: float,
) -> NextStep:
    """Where attempt ``record.attempts_used`` failing with ``failure`` leaves the task."""
    number = record.attempts_used
    by_number = {a.number: a for a in attempts}
    first = by_number.get(record.budget_base + 1)
    previous = by_number.get(number - 1) if number - 1 > record.budget_base else None
    decision = decide(
        policy,
        failure,
        attempt=number - record.budget_base,
        elapsed_s=0.0 if first is None else max(0.0, (ended_at - first.started_at).total_seconds()),
        previous_delay_s=None if previous is None else previous.delay_s,
        draw=draw,
    )
    outcome = outcome_for(failure, will_retry=decision.retry)
    state, reason, next_run_at = outcome.state, outcome.reason, None
    if state is TaskState.RETRYING:
        next_run_at = ended_at + _dt.timedelta(seconds=decision.delay_s)
    elif state is TaskState.PAUSED:
        next_run_at = failure.resets_at
    elif outcome.escalate and failure.kind is not FailureKind.CONTENT_POLICY:
        state = TaskState.ESCALATED
    # A content policy failure stays FAILED with its escalation open for an operator's
    # review (the adapter reliability contract's "FAILED + HIL escalation").
    if state is TaskState.FAILED and decision.reason not in (None, GiveUpReason.NOT_RETRYABLE):
        reason = f"{reason} ({decision.reason})"
    exhausted = decision.reason == GiveUpReason.ATTEMPTS_EXHAUSTED
    if state is TaskState.FAILED and exhausted and policy.escalate_on_exhaustion:
        # "Max retries exceeded → escalation triggered": a human decides (retry or fail).
        state, reason = TaskState.ESCALATED, f"{reason}; escalated: retries exhausted"
        return NextStep(state=state, reason=reason, next_run_at=None, delay_s=None, escalate=True)
    return NextStep(
        state=state,
        reason=reason,
        next_run_at=next_run_at,
        delay_s=decision.delay_s if decision.retry else None,
        escalate=outcome.escalate,
    )


def retry_refused(step: NextStep, failure: Failure, *, reason: str) -> NextStep:
    """``step`` (a retry) turned into the give-up the engine's retry budget makes of it:
    the task fails, ``reason`` named as a give-up reason is (``… (retry_budget_exhausted)``)."""
    given_up = outcome_for(failure, will_retry=False)
    return NextStep(
        state=TaskState.FAILED,
        reason=f"{given_up.reason} ({reason})",
        next_run_at=None,
        delay_s=None,
        escalate=False,
    )
