"""The values a ``TaskStore`` keeps and hands out: tasks, attempts, escalations.

* ``TaskRecord``: one task's spec and where it stands — state, reason, attempts used, when
  a paused or retrying task may run next, its result once it succeeded.
* ``AttemptRecord``: one attempt — recorded as ``running`` before it is dispatched, then
  ended as ``succeeded``, ``failed`` (with its ``Failure`` and the delay chosen before the
  next one) or ``interrupted`` (the runner died while it ran).
* ``Escalation``: a failure a human must look at, and what they decided.
* ``StateChange``: a state the task moves to, checked against the state machine by the
  store inside the transaction that records it.

Times are timezone-aware UTC datetimes from the engine's clock.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from backstay.adapters.usage import Usage
from backstay.engine.states import TaskState
from backstay.failure import Failure

if TYPE_CHECKING:  # a record's spec, typed: reading records needs not the spec's checks
    from backstay.engine.task import TaskSpec

__all__ = [
    "AttemptEnd",
    "AttemptOutcome",
    "AttemptRecord",
    "Escalation",
    "EscalationStatus",
    "NewEscalation",
    "ResolveAction",
    "StateChange",
    "TaskRecord",
]


class AttemptOutcome(enum.StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class EscalationStatus(enum.StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"


class ResolveAction(enum.StrEnum):
    """What a human decided: run the task again (``retry``; ``resume`` a paused one),
    ``fail`` it, or ``skip`` it (cancelled)."""

    RETRY = "retry"
    RESUME = "resume"
    FAIL = "fail"
    SKIP = "skip"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskRecord:
    """One task as stored. ``budget_base`` is the number of attempts made before the
    current retry budget began (a human's retry or a quota reset starts a new one; a
    crash does not), so the policy sees attempt ``attempts_used - budget_base``.
    ``missing_env``: secret variables of the spec whose values were not available when it
    was read back (they are never stored; see ``_spec_codec``)."""

    spec: TaskSpec
    state: TaskState
    reason: str
    attempts_used: int
    budget_base: int
    next_run_at: _dt.datetime | None
    result: Mapping[str, Any] | None
    created_at: _dt.datetime
    updated_at: _dt.datetime
    missing_env: tuple[str, ...] = ()

    @property
    def operation_id(self) -> str:
        return self.spec.operation_id

    @property
    def task_id(self) -> str:
        return self.spec.task_id


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AttemptRecord:
    operation_id: str
    number: int
    attempt_id: str
    output_dir: str
    started_at: _dt.datetime
    outcome: AttemptOutcome
    ended_at: _dt.datetime | None = None
    failure: Failure | None = None
    delay_s: float | None = None
    exit_code: int | None = None
    usage: Usage = dataclasses.field(default_factory=Usage)
    # The fallback candidate the attempt ran on (``Candidate.name``); None: the task's own.
    candidate: str | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AttemptEnd:
    """How attempt ``number`` ended; ``delay_s`` is the wait chosen before the next one."""

    number: int
    outcome: AttemptOutcome
    ended_at: _dt.datetime
    failure: Failure | None = None
    delay_s: float | None = None
    exit_code: int | None = None
    usage: Usage = dataclasses.field(default_factory=Usage)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StateChange:
    """Move the task to ``state`` for ``reason`` at ``at``. ``next_run_at``: when a
    retrying or paused task may run next. ``new_budget``: the attempts made so far no
    longer count against the policy. ``result``: a succeeded task's result."""

    state: TaskState
    reason: str
    at: _dt.datetime
    next_run_at: _dt.datetime | None = None
    new_budget: bool = False
    result: Mapping[str, Any] | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NewEscalation:
    """An escalation to record with the attempt that caused it. ``context`` is redacted
    by the store before it is written."""

    failure: Failure
    context: Mapping[str, Any]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Escalation:
    escalation_id: int
    operation_id: str
    task_id: str
    failure: Failure
    context: Mapping[str, Any]
    created_at: _dt.datetime
    status: EscalationStatus
    action: ResolveAction | None = None
    note: str = ""
    resolved_at: _dt.datetime | None = None
    resolved_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (times as ISO-8601, the failure as its ``to_dict``)."""
        return {
            "escalation_id": self.escalation_id,
            "operation_id": self.operation_id,
            "task_id": self.task_id,
            "failure": self.failure.to_dict(),
            "context": dict(self.context),
            "created_at": self.created_at.isoformat(),
            "status": str(self.status),
            "action": None if self.action is None else str(self.action),
            "note": self.note,
            "resolved_at": None if self.resolved_at is None else self.resolved_at.isoformat(),
            "resolved_by": self.resolved_by,
        }
