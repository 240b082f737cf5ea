"""``EscalationQueue``: the failures waiting for a human, and their decisions.

The engine records an escalation when a failure needs a person: authentication and
security failures (the task waits in ``escalated``), a content policy failure (the task
is ``failed``, the escalation open for an operator's review: ``retry`` re-opens it,
``fail`` leaves it), and an exhausted quota (the task waits in ``paused``, and also
resumes by itself once the quota resets).
``resolve(id, action, note)`` records the decision and moves the task in one transaction:

| action | task moves to | the next engine run |
|---|---|---|
| ``retry`` | ``pending`` | dispatches it again, with a new retry budget |
| ``resume`` | ``pending`` | same as ``retry``; the word for a paused task |
| ``fail`` | ``failed`` | leaves it (terminal) |
| ``skip`` | ``cancelled`` | leaves it (terminal) |

Attempt numbers continue either way (``attempt_4`` follows ``attempt_3``), so every
attempt keeps its own id and directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.engine.events import EscalationResolved
from backstay.engine.records import Escalation, ResolveAction, StateChange
from backstay.engine.states import TaskState
from backstay.engine.taskstore import TaskStore
from backstay.errors import ConfigError
from backstay.events import BUS

__all__ = ["ACTION_STATES", "EscalationQueue"]

ACTION_STATES: Final[Mapping[ResolveAction, TaskState]] = {
    ResolveAction.RETRY: TaskState.PENDING,
    ResolveAction.RESUME: TaskState.PENDING,
    ResolveAction.FAIL: TaskState.FAILED,
    ResolveAction.SKIP: TaskState.CANCELLED,
}
DEFAULT_RESOLVER: Final = "human"


def _action(value: object) -> ResolveAction:
    try:
        return ResolveAction(str(value))
    except ValueError:
        choices = ", ".join(a.value for a in ResolveAction)
        raise ConfigError(f"must be one of {choices}, got {value!r}", where="action") from None


class EscalationQueue:
    """The escalations in ``store``; decisions are timed by ``clock``."""

    def __init__(self, store: TaskStore, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.store = store
        self._clock = clock

    def list(self, *, include_resolved: bool = False) -> tuple[Escalation, ...]:
        """Open escalations (every one with ``include_resolved``), oldest first."""
        return self.store.escalations(open_only=not include_resolved)

    def get(self, escalation_id: int) -> Escalation:
        """Escalation ``escalation_id``; ``ConfigError`` when there is none."""
        found = self.store.escalation(escalation_id)
        if found is None:
            raise ConfigError(f"no escalation {escalation_id}", where="escalation_id")
        return found

    def resolve(
        self,
        escalation_id: int,
        action: ResolveAction | str,
        note: str = "",
        *,
        by: str = DEFAULT_RESOLVER,
    ) -> Escalation:
        """Record ``action`` on an open escalation and move its task (see the table).
        ``ConfigError`` for an unknown or already resolved escalation or an unknown
        action; ``InvalidTransition`` when the task is no longer where the action applies
        (nothing is recorded then)."""
        chosen = _action(action)
        if not isinstance(note, str):
            raise ConfigError(f"must be a string, got {note!r}", where="note")
        state = ACTION_STATES[chosen]
        reason = f"escalation {escalation_id} resolved: {chosen}" + (f" ({note})" if note else "")
        change = StateChange(
            state=state,
            reason=reason,
            at=self._clock.now(),
            new_budget=state is TaskState.PENDING,
        )
        resolved, task = self.store.resolve(
            escalation_id, action=chosen, note=note, by=by, change=change
        )
        if BUS.wants(EscalationResolved.level):
            BUS.emit(
                EscalationResolved(
                    operation=task.operation_id,
                    task_id=task.task_id,
                    escalation_id=escalation_id,
                    action=str(chosen),
                    state=str(task.state),
                    note=note,
                    by=by,
                )
            )
        return resolved
