"""``BatchView``: a batch as ``status`` and ``health`` show it, read through the task
store's index (``backstay.engine.task_index``) so that its cost follows what is shown,
not the size of the batch.

A task stored ``running`` whose operation no live lease holds — its runner was stopped
(Ctrl-C) or killed, and nothing runs it — is shown ``interrupted``: its lease was
released, has expired, or names a process of this host that no longer exists
(``holder_is_dead``). ``resume`` takes such a task up again. Only the running tasks are
looked at (a handful: as many as the runners' concurrency), one lease read each.

The tasks that need a person (``NEEDS_A_PERSON``): failed, paused, escalated, running and
interrupted ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Final, Protocol

from backstay.engine.records import TaskRecord
from backstay.engine.states import TaskState
from backstay.engine.task_index import TaskFilter, TaskIndex
from backstay.errors import ConfigError
from backstay.idempotency.owners import holder_is_dead

__all__ = [
    "INTERRUPTED",
    "NEEDS_A_PERSON",
    "SHOWN_STATES",
    "BatchView",
    "LeaseHolders",
    "Selection",
    "parse_states",
]

INTERRUPTED: Final = "interrupted"
SHOWN_STATES: Final = (*(str(state) for state in TaskState), INTERRUPTED)
NEEDS_A_PERSON: Final = frozenset({"failed", "paused", "escalated", "running", INTERRUPTED})
PAGE_SIZE: Final = 500


class LeaseHolders(Protocol):
    """What the view asks of the operation store: who holds a live lease."""

    def holder(self, operation_id: str) -> str | None: ...


def parse_states(values: list[str] | None, *, where: str = "--state") -> frozenset[str] | None:
    """The shown states named in ``values`` (``None``: none named); ``ConfigError`` for
    a name that is not one."""
    if not values:
        return None
    wrong = sorted(set(values) - set(SHOWN_STATES))
    if wrong:
        raise ConfigError(
            f"unknown state {', '.join(wrong)}; the states are {', '.join(SHOWN_STATES)}",
            where=where,
        )
    return frozenset(values)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Selection:
    """The tasks to show: those in the shown ``states`` (``None``: any) whose task id
    matches ``task_glob`` (``None``: any)."""

    states: frozenset[str] | None = None
    task_glob: str | None = None

    def task_filter(self) -> TaskFilter:
        """The stored states to read (``interrupted`` is stored ``running``)."""
        if self.states is None:
            return TaskFilter(task_glob=self.task_glob)
        stored = {TaskState.RUNNING if s == INTERRUPTED else TaskState(s) for s in self.states}
        return TaskFilter(states=frozenset(stored), task_glob=self.task_glob)


class BatchView:
    """The counts and the selected tasks of the batch in ``tasks``, with the interrupted
    ones found through ``leases``."""

    def __init__(self, tasks: TaskIndex, leases: LeaseHolders) -> None:
        self.tasks = tasks
        self._leases = leases
        self._interrupted: frozenset[str] | None = None

    def interrupted(self) -> frozenset[str]:
        """The operation ids of the tasks shown ``interrupted`` (read once per view)."""
        if self._interrupted is None:
            running = TaskFilter(states=frozenset({TaskState.RUNNING}))
            found: set[str] = set()
            for page in self.tasks.pages(running, size=PAGE_SIZE):
                for record in page:
                    owner = self._leases.holder(record.operation_id)
                    if owner is None or holder_is_dead(owner):
                        found.add(record.operation_id)
            self._interrupted = frozenset(found)
        return self._interrupted

    def counts(self) -> dict[str, int]:
        """Tasks per shown state (every one listed, zeros included)."""
        stored = self.tasks.state_counts()
        counts = {str(state): n for state, n in stored.items()}
        gone = len(self.interrupted())
        counts["running"] = max(counts.get("running", 0) - gone, 0)
        counts[INTERRUPTED] = gone
        return counts

    def shown_state(self, record: TaskRecord) -> str:
        if record.state is TaskState.RUNNING and record.operation_id in self.interrupted():
            return INTERRUPTED
        return str(record.state)

    def _splits_running(self, selection: Selection) -> bool:
        """Whether the selection takes some running tasks and leaves others."""
        states = selection.states
        return states is not None and (INTERRUPTED in states) != ("running" in states)

    def count(self, selection: Selection) -> int:
        """How many tasks ``selection`` takes."""
        if not self._splits_running(selection):
            return self.tasks.count(selection.task_filter())
        return sum(len(page) for page in self.select(selection))

    def select(
        self, selection: Selection, *, size: int = PAGE_SIZE
    ) -> Iterator[tuple[TaskRecord, ...]]:
        """The tasks ``selection`` takes, in registration order, ``size`` at a time."""
        split = self._splits_running(selection)
        for page in self.tasks.pages(selection.task_filter(), size=size):
            if not split:
                yield page
                continue
            wanted = selection.states or frozenset()
            kept = tuple(r for r in page if self.shown_state(r) in wanted)
            if kept:
                yield kept

    def first(self, selection: Selection, limit: int | None) -> tuple[list[TaskRecord], int]:
        """The first ``limit`` tasks ``selection`` takes (``None``: all) and how many more
        it takes beyond them."""
        shown: list[TaskRecord] = []
        size = PAGE_SIZE if limit is None else max(1, min(limit, PAGE_SIZE))
        for page in self.select(selection, size=size):
            room = len(page) if limit is None else limit - len(shown)
            shown += page[:room]
            if limit is not None and len(shown) >= limit:
                break
        return shown, max(self.count(selection) - len(shown), 0)
