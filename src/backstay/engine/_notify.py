"""Emitting the engine's events from stored records: each is built only when a sink wants
it, and only after the change it reports was recorded."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping

from backstay.engine.events import (
    AttemptEnded,
    AttemptFailedEnded,
    TaskCancelled,
    TaskDeferred,
    TaskEscalated,
    TaskFailed,
    TaskPaused,
    TaskResumed,
    TaskStarted,
    TaskSucceeded,
)
from backstay.engine.records import AttemptEnd, Escalation, TaskRecord
from backstay.engine.states import TaskState
from backstay.events import BUS, RateLimited, RetryScheduled
from backstay.failure import Failure
from backstay.taxonomy import FailureKind

__all__ = ["after_failure", "attempt_ended", "deferred", "resumed", "started", "succeeded"]


def _answering(record: TaskRecord, keys: Mapping[str, str] | None) -> dict[str, str]:
    """The adapter and model an attempt runs on (a fallback candidate's, from ``keys``:
    ``fallback.model_keys``) and those the task requested."""
    spec = record.spec
    keys = keys or {}
    return {
        "adapter": keys.get("adapter", spec.adapter),
        "model": keys.get("model", spec.model),
        "requested_adapter": keys.get("requested_adapter", spec.adapter),
        "requested_model": keys.get("requested_model", spec.model),
    }


def started(
    record: TaskRecord, *, attempt_id: str, policy: str, keys: Mapping[str, str] | None = None
) -> None:
    if BUS.wants(TaskStarted.level):
        BUS.emit(
            TaskStarted(
                operation=record.operation_id,
                policy=policy,
                task_id=record.task_id,
                attempt=record.attempts_used,
                attempt_id=attempt_id,
                **_answering(record, keys),
            )
        )


def attempt_ended(
    record: TaskRecord,
    end: AttemptEnd,
    attempt_id: str,
    started_at: _dt.datetime,
    keys: Mapping[str, str] | None,
    *,
    policy: str,
) -> None:
    """``attempt.ended`` of attempt ``attempt_id``, begun at ``started_at`` on the
    candidate ``keys`` names (``fallback.model_keys``)."""
    event = AttemptEnded if end.failure is None else AttemptFailedEnded
    if BUS.wants(event.level):
        BUS.emit(
            event(
                operation=record.operation_id,
                policy=policy,
                task_id=record.task_id,
                attempt=end.number,
                attempt_id=attempt_id,
                **_answering(record, keys),
                outcome=str(end.outcome),
                duration_s=(end.ended_at - started_at).total_seconds(),
                usage=end.usage,
                failure=end.failure,
                delay_s=end.delay_s,
            )
        )


def deferred(record: TaskRecord, *, breaker: str, wait_s: float, policy: str) -> None:
    if BUS.wants(TaskDeferred.level):
        BUS.emit(
            TaskDeferred(
                operation=record.operation_id,
                policy=policy,
                task_id=record.task_id,
                attempt=record.attempts_used + 1,
                breaker=breaker,
                wait_s=wait_s,
            )
        )


def succeeded(record: TaskRecord, *, policy: str | None, from_cache: bool = False) -> None:
    if BUS.wants(TaskSucceeded.level):
        BUS.emit(
            TaskSucceeded(
                operation=record.operation_id,
                policy=policy,
                task_id=record.task_id,
                attempts=record.attempts_used,
                from_cache=from_cache,
            )
        )


def resumed(record: TaskRecord, *, previous: TaskState, policy: str) -> None:
    if BUS.wants(TaskResumed.level):
        BUS.emit(
            TaskResumed(
                operation=record.operation_id,
                policy=policy,
                task_id=record.task_id,
                previous_state=str(previous),
                reason=record.reason,
            )
        )


def after_failure(
    record: TaskRecord,
    failure: Failure,
    escalation: Escalation | None,
    *,
    policy: str,
    delay_s: float,
) -> None:
    """The events of a failed attempt, from the state it left the task in."""
    op, task_id, state = record.operation_id, record.task_id, record.state
    if state is TaskState.RETRYING and BUS.wants(RetryScheduled.level):
        BUS.emit(
            RetryScheduled(
                operation=op,
                policy=policy,
                attempt=record.attempts_used,
                delay_s=delay_s,
                failure=failure,
            )
        )
        if failure.kind is FailureKind.RATE_LIMIT and BUS.wants(RateLimited.level):
            BUS.emit(
                RateLimited(
                    operation=op,
                    policy=policy,
                    attempt=record.attempts_used,
                    wait_s=delay_s,
                    failure=failure,
                    scheduled_retry=True,
                )
            )
    elif state is TaskState.FAILED and BUS.wants(TaskFailed.level):
        BUS.emit(
            TaskFailed(
                operation=op,
                policy=policy,
                task_id=task_id,
                attempts=record.attempts_used,
                reason=record.reason,
                failure=failure,
            )
        )
    elif state is TaskState.PAUSED and BUS.wants(TaskPaused.level):
        BUS.emit(
            TaskPaused(
                operation=op,
                policy=policy,
                task_id=task_id,
                reason=record.reason,
                resumes_at=record.next_run_at,
                failure=failure,
            )
        )
    elif state is TaskState.CANCELLED and BUS.wants(TaskCancelled.level):
        BUS.emit(TaskCancelled(operation=op, policy=policy, task_id=task_id, reason=record.reason))
    if escalation is not None and BUS.wants(TaskEscalated.level):
        BUS.emit(
            TaskEscalated(
                operation=op,
                policy=policy,
                task_id=task_id,
                escalation_id=escalation.escalation_id,
                reason=record.reason,
                failure=failure,
            )
        )
