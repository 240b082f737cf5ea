"""``TaskStore``: where the engine records tasks, attempts and escalations.

Every method that changes anything is one atomic transaction, and every state change in
it is checked with ``backstay.engine.states.transition`` against the state *as stored*:
a change the state machine refuses raises ``InvalidTransition`` and records nothing. The
engine calls the store BEFORE the side effect a record announces (an attempt is recorded
``running`` before it is dispatched; the decision after a failure is recorded before the
engine sleeps), so after a crash the store never claims less than what happened.

* ``register(spec, at)``: add a task as ``pending``, or update the spec of a known one
  (its state, attempts and escalations stay); ``register_all`` does it for a batch in
  one transaction, and ``register_each`` too, reading the specs a page at a time and
  returning only how many (a batch of 100,000 tasks is never held twice).
* ``begin_attempt``: ``pending``/``retrying`` → ``running`` and a ``running`` attempt
  ``attempts_used + 1``.
* ``end_attempt``: the attempt's end, the task's next state, and an escalation if any.
* ``recover_interrupted``: a ``running`` task whose runner died: its open attempt ends
  ``interrupted`` and the task moves to ``retrying`` (the reason counts the ``killed``
  processes the dead runner had left running).
* ``change_state``: any other allowed move; ``close_escalations`` also resolves the
  task's open escalations (a paused task whose quota reset passed).
* ``resolve``: a human's decision on an open escalation and the task's move, together.
* ``reopen``: an operator's retry (``backstay retry``): a ``failed`` or ``cancelled`` task
  back to ``pending`` with a new retry budget (``check_reopen``), its spec replaced when
  one is given (the same ``operation_id``: the suite's current form of the task).
* ``cancel``: an operator's cancel (``backstay cancel``): a task not yet terminal moves to
  ``cancelled``; an attempt recorded ``running`` ends ``interrupted`` and the task's open
  escalations are resolved ``skip``, in the same transaction.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from backstay.engine.records import (
    AttemptEnd,
    AttemptRecord,
    Escalation,
    NewEscalation,
    ResolveAction,
    StateChange,
    TaskRecord,
)
from backstay.engine.task import TaskSpec

__all__ = ["TaskStore"]


@runtime_checkable
class TaskStore(Protocol):
    """Durable task state; see the module docstring for the contract."""

    def register(self, spec: TaskSpec, *, at: _dt.datetime) -> TaskRecord: ...

    def register_all(
        self, specs: Sequence[TaskSpec], *, at: _dt.datetime
    ) -> tuple[TaskRecord, ...]:
        """``register`` each of ``specs``, all in one transaction; their records, in order."""

    def register_each(self, specs: Iterable[TaskSpec], *, at: _dt.datetime) -> int:
        """``register`` each of ``specs`` (read once, encoded as they are read): every
        task is recorded, or none (a spec refused on the way, or a process killed before
        the commit begins, leaves the store as it was); how many. SQLite: one transaction;
        Redis: staged, then committed in windows of at most 1,000 tasks a script, a commit
        cut short finished by ``finish_staged`` (``backstay.engine.registration``). Keeps
        no record, for a batch of any size: the engine's way to record a whole batch."""

    def task(self, operation_id: str) -> TaskRecord | None: ...

    def tasks(self) -> tuple[TaskRecord, ...]:
        """Every task, in the order they were first registered."""
        ...

    def attempts(self, operation_id: str | None = None) -> tuple[AttemptRecord, ...]:
        """The attempts of one task (or of all), in order."""
        ...

    def begin_attempt(
        self,
        operation_id: str,
        *,
        number: int,
        attempt_id: str,
        output_dir: str,
        at: _dt.datetime,
        candidate: str | None = None,
    ) -> TaskRecord: ...

    def end_attempt(
        self,
        operation_id: str,
        end: AttemptEnd,
        change: StateChange,
        *,
        escalation: NewEscalation | None = None,
    ) -> tuple[TaskRecord, Escalation | None]: ...

    def recover_interrupted(
        self, operation_id: str, *, at: _dt.datetime, killed: int = 0
    ) -> TaskRecord: ...

    def change_state(
        self, operation_id: str, change: StateChange, *, close_escalations: str | None = None
    ) -> TaskRecord: ...

    def escalations(self, *, open_only: bool = False) -> tuple[Escalation, ...]: ...

    def escalation(self, escalation_id: int) -> Escalation | None: ...

    def resolve(
        self,
        escalation_id: int,
        *,
        action: ResolveAction,
        note: str,
        by: str,
        change: StateChange,
    ) -> tuple[Escalation, TaskRecord]: ...

    def reopen(
        self, operation_id: str, change: StateChange, *, spec: TaskSpec | None = None
    ) -> TaskRecord:
        """See the module docstring; ``InvalidTransition`` (nothing recorded) unless the
        task is ``failed`` or ``cancelled``."""
        ...

    def cancel(self, operation_id: str, change: StateChange) -> TaskRecord:
        """See the module docstring; ``InvalidTransition`` for a terminal task."""
        ...

    def close(self) -> None: ...
