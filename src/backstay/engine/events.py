"""The engine's events: what happened to a task, emitted after it was recorded.

``operation`` is the task's ``operation_id`` and ``policy`` its retry policy's name. A
retry is announced by ``backstay.observe.RetryScheduled`` (``task.retrying``), the event
the call drivers use as well.

| event | name | when |
|---|---|---|
| ``TaskStarted`` | ``task.started`` | an attempt was recorded and is about to be dispatched |
| ``AttemptEnded`` | ``attempt.ended`` | an attempt's end was recorded (before the task's event) |
| ``TaskDeferred`` | ``task.deferred`` | the task's circuit is open: it waits, without an attempt |
| ``TaskFellBack`` | ``task.fell_back`` | a failure moved the task to another fallback candidate |
| ``TaskSucceeded`` | ``task.succeeded`` | the task succeeded (or its cached result was adopted) |
| ``TaskFailed`` | ``task.failed`` | the task failed for good |
| ``TaskPaused`` | ``task.paused`` | a quota ran out; ``resumes_at`` when it resets, if known |
| ``TaskEscalated`` | ``task.escalated`` | an escalation was recorded for a human |
| ``TaskCancelled`` | ``task.cancelled`` | the attempt was cancelled (or a human skipped the task) |
| ``TaskResumed`` | ``task.resumed`` | an interrupted or paused task was taken up again |
| ``TaskReopened`` | ``task.reopened`` | an operator re-opened a failed or cancelled task |
| ``EscalationResolved`` | ``escalation.resolved`` | a human resolved an escalation |
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import logging
from typing import Any, ClassVar

from backstay.adapters.usage import Usage
from backstay.events import Event
from backstay.events.event import field_names
from backstay.failure import Failure

__all__ = [
    "AttemptEnded",
    "AttemptFailedEnded",
    "EscalationResolved",
    "TaskCancelled",
    "TaskDeferred",
    "TaskEscalated",
    "TaskFailed",
    "TaskFellBack",
    "TaskPaused",
    "TaskReopened",
    "TaskResumed",
    "TaskStarted",
    "TaskSucceeded",
]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _TaskEvent(Event):
    task_id: str

    def to_dict(self) -> dict[str, Any]:
        """``Event.to_dict`` with each ``datetime`` in ISO-8601, in one pass over the
        fields (a task's events are written a few times a task)."""
        out: dict[str, Any] = {"event": self.name}
        for name in field_names(type(self)):
            value = getattr(self, name)
            kind = type(value)
            if kind is str or kind is int or value is None:
                pass  # most fields: neither a Failure nor a datetime
            elif isinstance(value, Failure):
                value = value.to_dict()
            elif isinstance(value, _dt.datetime):
                value = value.isoformat()
            out[name] = value
        return out


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskStarted(_TaskEvent):
    """Attempt ``attempt`` began on ``adapter`` and ``model`` (a fallback candidate's
    when the chain moved; ``requested_adapter``/``requested_model``: the task's own)."""

    name: ClassVar[str] = "task.started"
    attempt: int
    attempt_id: str
    adapter: str = ""
    model: str = ""
    requested_adapter: str = ""
    requested_model: str = ""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AttemptEnded(_TaskEvent):
    """Attempt ``attempt`` ended ``outcome`` (``succeeded``, ``failed``) after
    ``duration_s``, having used ``usage``; a failed one with its ``failure`` and the
    ``delay_s`` chosen before the next attempt (None: no next attempt). ``adapter`` and
    ``model`` are the answering candidate's, ``requested_*`` the task's own."""

    name: ClassVar[str] = "attempt.ended"
    attempt: int
    attempt_id: str
    adapter: str
    model: str
    outcome: str
    duration_s: float
    usage: Usage
    failure: Failure | None = None
    delay_s: float | None = None
    requested_adapter: str = ""
    requested_model: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = _TaskEvent.to_dict(self)
        usage = self.usage  # its fields are numbers: a flat copy is ``dataclasses.asdict``'s
        out["usage"] = {name: getattr(usage, name) for name in field_names(type(usage))}
        return out


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AttemptFailedEnded(AttemptEnded):
    """An ``attempt.ended`` whose outcome is a failure: the same event, logged at WARNING
    (the retry policy framework's level for an attempt's failure)."""

    level: ClassVar[int] = logging.WARNING


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskDeferred(_TaskEvent):
    """The circuit ``breaker`` is open: the task waits ``wait_s`` before it asks again
    for attempt ``attempt``. A wait, not an attempt: no attempt is recorded or counted."""

    name: ClassVar[str] = "task.deferred"
    attempt: int
    breaker: str
    wait_s: float


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskSucceeded(_TaskEvent):
    name: ClassVar[str] = "task.succeeded"
    attempts: int
    from_cache: bool = False


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskFailed(_TaskEvent):
    """The task's final failure (logged at ERROR, as the retry policy framework asks)."""

    name: ClassVar[str] = "task.failed"
    level: ClassVar[int] = logging.ERROR
    attempts: int
    reason: str
    failure: Failure | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskPaused(_TaskEvent):
    name: ClassVar[str] = "task.paused"
    level: ClassVar[int] = logging.WARNING
    reason: str
    resumes_at: _dt.datetime | None
    failure: Failure


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskEscalated(_TaskEvent):
    name: ClassVar[str] = "task.escalated"
    level: ClassVar[int] = logging.WARNING
    escalation_id: int
    reason: str
    failure: Failure


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskCancelled(_TaskEvent):
    """The task was cancelled: its attempt, a human's ``skip``, or an operator (``by``,
    from ``previous_state``: ``backstay cancel``)."""

    name: ClassVar[str] = "task.cancelled"
    reason: str
    previous_state: str = ""
    by: str = ""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskResumed(_TaskEvent):
    name: ClassVar[str] = "task.resumed"
    previous_state: str
    reason: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskReopened(_TaskEvent):
    """An operator moved the task from ``previous_state`` (failed, cancelled) back to
    pending with a new retry budget; ``spec`` says which spec it runs with next:
    ``stored`` (as recorded) or ``suite`` (the suite file's current one)."""

    name: ClassVar[str] = "task.reopened"
    previous_state: str
    reason: str
    spec: str
    by: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EscalationResolved(_TaskEvent):
    name: ClassVar[str] = "escalation.resolved"
    escalation_id: int
    action: str
    state: str
    note: str
    by: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskFellBack(_TaskEvent):
    """Attempt ``attempt`` failed on ``from_candidate`` with ``kind``; the next attempt
    runs on ``to_candidate`` at once."""

    name: ClassVar[str] = "task.fell_back"
    level: ClassVar[int] = logging.WARNING
    attempt: int
    from_candidate: str
    to_candidate: str
    kind: str
    failure: Failure
