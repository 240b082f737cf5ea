"""``status --json``: the batch's summary and its tasks as one JSON document, written as
it is read — a page of tasks at a time, so memory stays flat however large the batch.

The document is the one ``status --json`` always gave (``state_dir``, ``batch``, the
summary's keys, ``tasks``), with ``tasks`` written first, one task per line, and the
totals after them (they are added up while the tasks stream by). ``by_state`` counts
``interrupted`` apart from ``running``; a task's ``state`` says ``interrupted`` too.
``selected`` says which tasks ``tasks`` lists (every one by default) and ``more`` how many
others the selection took beyond ``--limit``. A batch still being recorded a page at a
time also has ``recording`` (``recorded`` of ``total``; ``backstay.engine.registration``).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Final

from backstay.adapters.usage import Usage
from backstay.cli._report import task_label
from backstay.engine import BatchIdentity, Summary, TaskRecord
from backstay.engine.circuit_log import CircuitEntry
from backstay.engine.registration import PagedRegistration
from backstay.engine.summary import summarize
from backstay.engine.task_index import TaskFilter
from backstay.observe.batch_view import BatchView, Selection
from backstay.policy.spend import ScopeTotals

__all__ = ["write_status_json"]

PAGE: Final = 1000


@dataclasses.dataclass(kw_only=True)
class _Totals:
    """The summary's sums over the pages read so far."""

    attempts: int = 0
    waited_s: float = 0.0
    usage: Usage = dataclasses.field(default_factory=Usage)
    kinds: Counter[str] = dataclasses.field(default_factory=Counter)
    trips: Counter[str] = dataclasses.field(default_factory=Counter)
    circuit_waits: int = 0
    circuit_waited_s: float = 0.0
    budget_paused: int = 0
    answers: Counter[str] = dataclasses.field(default_factory=Counter)
    fell_back: int = 0
    next_resume_at: _dt.datetime | None = None

    def add(self, part: Summary) -> None:
        self.attempts += part.attempts
        self.waited_s += part.waited_s
        self.usage = self.usage + part.usage
        self.kinds.update(part.failures_by_kind)
        self.trips.update(part.trips_by_breaker)
        self.circuit_waits += part.circuit_waits
        self.circuit_waited_s += part.circuit_waited_s
        self.budget_paused += part.budget_paused
        self.answers.update(part.answers_by_model)
        self.fell_back += part.fell_back
        resume = part.next_resume_at
        if resume is not None and (self.next_resume_at is None or resume < self.next_resume_at):
            self.next_resume_at = resume


def _task_json(report: dict[str, Any], record: TaskRecord, state: str) -> str:
    report["state"] = state
    report["run"] = task_label(record.operation_id)
    report["next_run_at"] = None if record.next_run_at is None else record.next_run_at.isoformat()
    return json.dumps(report, ensure_ascii=False)


def write_status_json(
    out: IO[str],
    view: BatchView,
    *,
    selection: Selection,
    limit: int | None,
    state_dir: Path,
    identity: BatchIdentity | None,
    circuits: Sequence[CircuitEntry],
    spending: Sequence[ScopeTotals],
) -> None:
    """Write the document (see the module docstring) to ``out``."""
    head: dict[str, Any] = {
        "state_dir": str(state_dir),
        "batch": None if identity is None else identity.to_dict(),
    }
    header = view.tasks.registration() if isinstance(view.tasks, PagedRegistration) else None
    if header is not None:  # a batch still being recorded a page at a time
        head["recording"] = {"recorded": header.recorded, "total": header.total}
    out.write("{\n" + json.dumps(head, indent=2)[2:-2] + ',\n  "tasks": [')
    totals, listed, more, sep = _Totals(), 0, 0, "\n"
    stored = selection.task_filter()
    for page in view.tasks.pages(TaskFilter(), size=PAGE):
        ops = [record.operation_id for record in page]
        part = summarize(page, view.tasks.attempts_of(ops), (), circuits=circuits)
        totals.add(part)
        for record, report in zip(page, part.tasks, strict=True):
            state = view.shown_state(record)
            if not stored.admits(record.state, record.task_id) or (
                selection.states is not None and state not in selection.states
            ):
                continue
            if limit is not None and listed >= limit:
                more += 1
                continue
            out.write(sep + "    " + _task_json(report.to_dict(), record, state))
            sep, listed = ",\n", listed + 1
    out.write("\n  ],\n")
    counts = view.counts()
    usage = totals.usage
    tail = {
        "total": sum(counts.values()),
        "by_state": counts,
        "failures_by_kind": dict(sorted(totals.kinds.items())),
        "attempts": totals.attempts,
        "waited_s": round(totals.waited_s, 3),
        "circuit_trips": sum(totals.trips.values()),
        "trips_by_breaker": dict(sorted(totals.trips.items())),
        "circuit_waits": totals.circuit_waits,
        "circuit_waited_s": round(totals.circuit_waited_s, 3),
        "tokens_input": usage.prompt_tokens,
        "tokens_output": usage.output_tokens,
        "tokens_total": usage.tokens_total,
        "cost_usd": usage.cost_usd,
        "fell_back": totals.fell_back,
        "answers_by_model": dict(sorted(totals.answers.items())),
        "open_escalations": view.tasks.open_escalation_count(),
        "budget_paused": totals.budget_paused,
        "spending": [t.to_dict() for t in spending],
        "next_resume_at": None
        if totals.next_resume_at is None
        else totals.next_resume_at.isoformat(),
        "selected": {
            "states": None if selection.states is None else sorted(selection.states),
            "task": selection.task_glob,
            "limit": limit,
        },
        "listed": listed,
        "more": more,
    }
    out.write(json.dumps(tail, indent=2)[2:] + "\n")
