"""``Summary``: what a batch came to, computed from the stored records alone.

Counts are taken from the state file, so a summary after a resume covers every attempt
of every run of the batch, including those of processes that died.

* ``by_state``: tasks per state (every state listed, zeros included);
* ``failures_by_kind``: failed attempts per failure kind;
* ``attempts``: attempts made (an ``interrupted`` one counts: it may have run);
* ``waited_s``: the delays chosen before retries (backoff and Retry-After), added up;
* ``circuit_trips`` (and ``trips_by_breaker``): how often an attempt of these tasks
  opened a circuit; ``circuit_waits`` and ``circuit_waited_s``: how often and how long
  they waited for an open circuit (from the circuit log; waits are not attempts);
* tokens and ``cost_usd`` over every attempt (``None`` when no attempt reported a cost);
* ``open_escalations`` and ``next_resume_at`` (the earliest reset of a paused task);
* ``budget_paused``: tasks paused because a spending budget had no room for their next
  attempt (``budget_exceeded``), and ``spending``: the batch's and tenants' budgets with
  what was spent and is reserved (docs/budgets.md);
* ``fell_back``: succeeded tasks answered by another model than the one requested (a
  fallback candidate), and ``answers_by_model``: succeeded tasks per answering
  ``"adapter/model"``;
* ``tasks``: one ``TaskReport`` per task, in registration order, each with its requested
  adapter and model and, once it succeeded, the answering ones.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from backstay.adapters.usage import Usage
from backstay.engine.circuit_log import CircuitChange, CircuitEntry
from backstay.engine.records import (
    AttemptOutcome,
    AttemptRecord,
    Escalation,
    EscalationStatus,
    TaskRecord,
)
from backstay.engine.states import TERMINAL, TaskState
from backstay.engine.task import TaskSpec
from backstay.policy.spend import BUDGET_EXCEEDED, ScopeTotals

__all__ = ["Summary", "TaskReport", "summarize", "summarize_pages"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskReport:
    """One task's line in a summary: ``requested`` is its own ``"adapter/model"``,
    ``answered`` the one whose attempt succeeded (``None`` until one did)."""

    operation_id: str
    task_id: str
    state: TaskState
    reason: str
    attempts: int
    requested: str = ""
    answered: str | None = None

    @property
    def fell_back(self) -> bool:
        """Whether another model than the one requested answered."""
        return self.answered is not None and self.answered != self.requested

    def to_dict(self) -> dict[str, Any]:
        return {
            "operation_id": self.operation_id,
            "task_id": self.task_id,
            "state": str(self.state),
            "reason": self.reason,
            "attempts": self.attempts,
            "requested": self.requested,
            "answered": self.answered,
            "fell_back": self.fell_back,
        }


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    """A batch's totals; see the module docstring. ``to_dict`` gives JSON-ready data."""

    by_state: Mapping[TaskState, int]
    failures_by_kind: Mapping[str, int]
    attempts: int
    waited_s: float
    usage: Usage
    open_escalations: int
    circuit_trips: int = 0
    trips_by_breaker: Mapping[str, int] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    circuit_waits: int = 0
    circuit_waited_s: float = 0.0
    budget_paused: int = 0
    spending: tuple[ScopeTotals, ...] = ()
    next_resume_at: _dt.datetime | None
    tasks: tuple[TaskReport, ...]

    @property
    def fell_back(self) -> int:
        """Succeeded tasks answered by another model than the one requested."""
        return sum(1 for report in self.tasks if report.fell_back)

    @property
    def answers_by_model(self) -> dict[str, int]:
        """Succeeded tasks per answering ``"adapter/model"``, sorted by name."""
        counts = Counter(r.answered for r in self.tasks if r.answered is not None)
        return dict(sorted(counts.items()))

    @property
    def total(self) -> int:
        return len(self.tasks)

    @property
    def finished(self) -> bool:
        """Whether every task is in a terminal state."""
        return all(report.state in TERMINAL for report in self.tasks)

    def count(self, state: TaskState) -> int:
        return self.by_state.get(state, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "by_state": {str(state): n for state, n in self.by_state.items()},
            "failures_by_kind": dict(self.failures_by_kind),
            "attempts": self.attempts,
            "waited_s": round(self.waited_s, 3),
            "circuit_trips": self.circuit_trips,
            "trips_by_breaker": dict(self.trips_by_breaker),
            "circuit_waits": self.circuit_waits,
            "circuit_waited_s": round(self.circuit_waited_s, 3),
            "tokens_input": self.usage.prompt_tokens,
            "tokens_output": self.usage.output_tokens,
            "tokens_total": self.usage.tokens_total,
            "cost_usd": self.usage.cost_usd,
            "fell_back": self.fell_back,
            "answers_by_model": self.answers_by_model,
            "open_escalations": self.open_escalations,
            "budget_paused": self.budget_paused,
            "spending": [totals.to_dict() for totals in self.spending],
            "next_resume_at": None
            if self.next_resume_at is None
            else self.next_resume_at.isoformat(),
            "tasks": [report.to_dict() for report in self.tasks],
        }


def summarize(
    tasks: Iterable[TaskRecord],
    attempts: Iterable[AttemptRecord],
    escalations: Iterable[Escalation],
    *,
    circuits: Iterable[CircuitEntry] = (),
    spending: Iterable[ScopeTotals] = (),
) -> Summary:
    """The summary of ``tasks``; attempts, escalations and circuit entries of other tasks
    are ignored."""
    chosen = list(tasks)
    ids = {t.operation_id for t in chosen}
    mine = [a for a in attempts if a.operation_id in ids]
    states = Counter(t.state for t in chosen)
    kinds = Counter(
        str(a.failure.kind)
        for a in mine
        if a.outcome is AttemptOutcome.FAILED and a.failure is not None
    )
    usage = Usage()
    for attempt in mine:
        usage = usage + attempt.usage
    entries = [e for e in circuits if e.operation_id in ids]
    trips = Counter(e.breaker for e in entries if e.change is CircuitChange.OPENED)
    waits = [e.wait_s or 0.0 for e in entries if e.change is CircuitChange.WAITED]
    # The candidate each task's succeeded attempt ran on (None: the task's own model).
    succeeded = {a.operation_id: a.candidate for a in mine if a.outcome is AttemptOutcome.SUCCEEDED}
    resets = [t.next_run_at for t in chosen if t.state is TaskState.PAUSED and t.next_run_at]
    return Summary(
        by_state=MappingProxyType({state: states.get(state, 0) for state in TaskState}),
        failures_by_kind=MappingProxyType(dict(sorted(kinds.items()))),
        attempts=len(mine),
        waited_s=sum(a.delay_s or 0.0 for a in mine),
        usage=usage,
        open_escalations=sum(
            1 for e in escalations if e.operation_id in ids and e.status is EscalationStatus.OPEN
        ),
        next_resume_at=min(resets, default=None),
        circuit_trips=sum(trips.values()),
        trips_by_breaker=MappingProxyType(dict(sorted(trips.items()))),
        circuit_waits=len(waits),
        circuit_waited_s=sum(waits),
        budget_paused=sum(1 for t in chosen if _paused_by_budget(t)),
        spending=tuple(spending),
        tasks=tuple(_report(t, succeeded) for t in chosen),
    )


def _model(spec: TaskSpec, candidate: str | None) -> str:
    """``"adapter/model"`` of the candidate an attempt ran on (``None``: the task's own)."""
    chosen = next((c for c in spec.candidates if c.name == candidate), spec.primary)
    return f"{chosen.adapter}/{chosen.model}"


def _report(task: TaskRecord, succeeded: Mapping[str, str | None]) -> TaskReport:
    op = task.operation_id
    return TaskReport(
        operation_id=op,
        task_id=task.task_id,
        state=task.state,
        reason=task.reason,
        attempts=task.attempts_used,
        requested=f"{task.spec.adapter}/{task.spec.model}",
        answered=_model(task.spec, succeeded[op]) if op in succeeded else None,
    )


def _paused_by_budget(task: TaskRecord) -> bool:
    return task.state is TaskState.PAUSED and task.reason.startswith(BUDGET_EXCEEDED)


def summarize_pages(
    pages: Iterable[Sequence[TaskRecord]],
    attempts_of: Callable[[Collection[str]], Iterable[AttemptRecord]],
    escalations: Iterable[Escalation],
    *,
    circuits: Iterable[CircuitEntry] = (),
    spending: Iterable[ScopeTotals] = (),
) -> Summary:
    """``summarize`` of the tasks of ``pages``, a page at a time (``attempts_of`` gives a
    page's attempts): the same summary, without every record in memory at once."""
    opened = [e for e in escalations if e.status is EscalationStatus.OPEN]
    entries = list(circuits)
    parts = [
        summarize(page, attempts_of([t.operation_id for t in page]), opened, circuits=entries)
        for page in pages
    ]
    states: Counter[TaskState] = Counter()
    kinds: Counter[str] = Counter()
    trips: Counter[str] = Counter()
    usage = Usage()
    for part in parts:
        states.update(part.by_state)
        kinds.update(part.failures_by_kind)
        trips.update(part.trips_by_breaker)
        usage = usage + part.usage
    resets = [p.next_resume_at for p in parts if p.next_resume_at is not None]
    return Summary(
        by_state=MappingProxyType({state: states.get(state, 0) for state in TaskState}),
        failures_by_kind=MappingProxyType(dict(sorted(kinds.items()))),
        attempts=sum(p.attempts for p in parts),
        waited_s=sum(p.waited_s for p in parts),
        usage=usage,
        open_escalations=sum(p.open_escalations for p in parts),
        next_resume_at=min(resets, default=None),
        circuit_trips=sum(trips.values()),
        trips_by_breaker=MappingProxyType(dict(sorted(trips.items()))),
        circuit_waits=sum(p.circuit_waits for p in parts),
        circuit_waited_s=sum(p.circuit_waited_s for p in parts),
        budget_paused=sum(p.budget_paused for p in parts),
        spending=tuple(spending),
        tasks=tuple(report for p in parts for report in p.tasks),
    )
