"""``TaskControls``: an operator's re-run and cancel of a batch's tasks (``backstay retry``,
``backstay cancel``), on whatever store the batch lives in.

* ``retry``: ``failed`` or ``cancelled`` → ``pending``, with a new retry budget and the
  stored spec, or the one given (the suite's current form of the task).
* ``cancel``: ``pending``, ``retrying``, ``paused`` or ``escalated`` → ``cancelled``, its
  open escalations resolved ``skip``. A ``running`` task's attempt ends ``interrupted``
  and its lease is revoked: the runner holding it is refused its next renewal (within a
  third of its ``--lease-ttl``) and stops the attempt, killing the agent's processes.

Each move is one store transaction checked against the state as stored, then announced
(``TaskReopened``, ``TaskCancelled``). A retried task runs at the next ``backstay
resume``; attempt numbers continue (``attempt_4`` follows ``attempt_3``).
"""

from __future__ import annotations

import dataclasses
from typing import Final, Protocol, runtime_checkable

from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.engine.events import TaskCancelled, TaskReopened
from backstay.engine.records import StateChange, TaskRecord
from backstay.engine.states import TaskState
from backstay.engine.task import TaskSpec
from backstay.engine.taskstore import TaskStore
from backstay.errors import ConfigError
from backstay.events import BUS

__all__ = ["DEFAULT_OPERATOR", "Moved", "Revoker", "TaskControls", "replacing"]

DEFAULT_OPERATOR: Final = "operator"


def replacing(spec: TaskSpec, operation_id: str) -> TaskSpec:
    """``spec``, when it may replace the stored spec of ``operation_id`` (it names that
    very task); a ``ConfigError`` otherwise. The stores' ``reopen`` checks with it."""
    if spec.operation_id != operation_id:
        raise ConfigError(
            f"names {spec.operation_id!r}, not the task {operation_id!r}", where="spec"
        )
    return spec


@runtime_checkable
class Revoker(Protocol):
    """An operation store that can end a lease it does not hold (``StoreBase.revoke``)."""

    def revoke(self, operation_id: str) -> bool: ...


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Moved:
    """One task an operator moved: where it was, and the task as stored now.
    ``stopped``: a running attempt was told to stop (its lease revoked)."""

    previous: TaskState
    record: TaskRecord
    stopped: bool = False


class TaskControls:
    """The operator's moves on ``store``'s tasks, timed by ``clock``; ``leases``: the
    operation store whose leases a cancel revokes (``None``: none)."""

    def __init__(
        self,
        store: TaskStore,
        *,
        leases: Revoker | None = None,
        clock: Clock = SYSTEM_CLOCK,
        by: str = DEFAULT_OPERATOR,
    ) -> None:
        self.store = store
        self.leases = leases
        self.clock = clock
        self.by = by

    def retry(self, record: TaskRecord, *, spec: TaskSpec | None = None) -> Moved:
        """Re-open ``record`` (failed or cancelled) to ``pending``, with ``spec`` in place
        of the stored one when given; ``InvalidTransition`` from any other state."""
        source = "stored" if spec is None else "suite"
        reason = f"retried by {self.by} (spec: {source})"
        change = StateChange(
            state=TaskState.PENDING, reason=reason, at=self.clock.now(), new_budget=True
        )
        moved = self.store.reopen(record.operation_id, change, spec=spec)
        if BUS.wants(TaskReopened.level):
            BUS.emit(
                TaskReopened(
                    operation=moved.operation_id,
                    task_id=moved.task_id,
                    previous_state=str(record.state),
                    reason=reason,
                    spec=source,
                    by=self.by,
                )
            )
        return Moved(previous=record.state, record=moved)

    def cancel(self, record: TaskRecord, *, note: str = "") -> Moved:
        """Cancel ``record`` (any state but a terminal one: ``InvalidTransition``); a
        running one's lease is revoked so that its runner stops the attempt."""
        reason = f"cancelled by {self.by}" + (f" ({note})" if note else "")
        change = StateChange(state=TaskState.CANCELLED, reason=reason, at=self.clock.now())
        moved = self.store.cancel(record.operation_id, change)
        stopped = False
        if self.leases is not None:  # a runner may hold even a pending task (waiting its turn)
            stopped = self.leases.revoke(record.operation_id)
        if BUS.wants(TaskCancelled.level):
            BUS.emit(
                TaskCancelled(
                    operation=moved.operation_id,
                    task_id=moved.task_id,
                    reason=reason,
                    previous_state=str(record.state),
                    by=self.by,
                )
            )
        return Moved(previous=record.state, record=moved, stopped=stopped)
