"""``TaskIndex``: how a reader finds its way in a large batch without decoding every task.

Every task store keeps, beside its records, the tasks counted per state (in the very
transaction of each change: SQLite triggers, Redis counters in the move's ``MULTI``) and
an index of the tasks of each state in registration order. A reader that needs the
summary takes the counts; one that needs some tasks (those of a few states, those whose
task id matches a pattern, the first ``N`` of them) reads only those, a page at a time,
so its cost follows what it shows, not the size of the batch.

* ``state_counts()``: tasks per state, every state listed (zeros included);
* ``count(where)``: how many tasks ``where`` selects;
* ``pages(where, size=N)``: the tasks ``where`` selects, in registration order, ``N`` at a
  time (records decoded per page: memory stays flat however many there are);
* ``attempts_of(operation_ids)``: the attempts of those tasks, in order;
* ``open_escalation_count()``: escalations waiting for a human.

``TaskFilter.task_glob`` is a shell-style pattern (``*``, ``?``, ``[seq]``, ``[!seq]``)
matched against the whole task id, case-sensitively.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Collection, Iterator
from typing import Protocol, runtime_checkable

from backstay.engine.records import AttemptRecord, TaskRecord
from backstay.engine.states import TaskState

__all__ = ["TaskFilter", "TaskIndex", "glob_matches"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskFilter:
    """Which tasks a reader wants: those in ``states`` (``None``: every state) whose task
    id matches ``task_glob`` (``None``: any)."""

    states: frozenset[TaskState] | None = None
    task_glob: str | None = None

    def admits(self, state: TaskState, task_id: str) -> bool:
        """Whether a task in ``state`` with ``task_id`` is selected."""
        if self.states is not None and state not in self.states:
            return False
        return self.task_glob is None or glob_matches(self.task_glob, task_id)


def glob_matches(pattern: str, task_id: str) -> bool:
    """Whether ``task_id`` matches the shell-style ``pattern`` (case-sensitive)."""
    return fnmatch.fnmatchcase(task_id, pattern)


@runtime_checkable
class TaskIndex(Protocol):
    """The reading side of a task store; see the module docstring."""

    def state_counts(self) -> dict[TaskState, int]: ...

    def count(self, where: TaskFilter) -> int: ...

    def pages(self, where: TaskFilter, *, size: int) -> Iterator[tuple[TaskRecord, ...]]: ...

    def attempts_of(self, operation_ids: Collection[str]) -> tuple[AttemptRecord, ...]: ...

    def open_escalation_count(self) -> int: ...
