"""The summary sections of the HTML report (outcome, failures, timeline, waits, usage,
open escalations), each HTML made from what the report added up (``_totals``), never from
every record. Every text taken from the records is escaped, and every failure's text
redacted. The tasks section is ``_tasks``."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from html import escape
from typing import Final

from backstay.engine.circuit_log import CircuitChange, CircuitEntry
from backstay.engine.records import Escalation, EscalationStatus
from backstay.engine.states import TaskState
from backstay.observe.report._svg import bars, timeline
from backstay.observe.report._totals import AttemptTotals, Timeline, UsageByModel
from backstay.redact import redact

__all__ = [
    "EVIDENCE_CHARS",
    "STATE_COLOURS",
    "escalations",
    "failures",
    "outcome",
    "table",
    "timeline_section",
    "usage",
    "waits",
]

STATE_COLOURS: Final = {
    TaskState.SUCCEEDED: "#16a34a",
    TaskState.FAILED: "#dc2626",
    TaskState.CANCELLED: "#9ca3af",
    TaskState.PAUSED: "#f59e0b",
    TaskState.ESCALATED: "#a855f7",
    TaskState.RETRYING: "#3b82f6",
    TaskState.RUNNING: "#0ea5e9",
    TaskState.PENDING: "#64748b",
}
_MARKS: Final = {
    CircuitChange.OPENED: "#dc2626",
    CircuitChange.HALF_OPENED: "#f59e0b",
    CircuitChange.CLOSED: "#16a34a",
}
EVIDENCE_CHARS: Final = 400


def table(head: Iterable[str], rows: Iterable[Iterable[object]], cls: str = "") -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def outcome(counts: Mapping[TaskState, int], attempts: int) -> str:
    cards = "".join(
        f'<div class="card" style="border-color:{STATE_COLOURS[s]}"><b>{counts[s]}</b>'
        f"<span>{s}</span></div>"
        for s in STATE_COLOURS
        if counts.get(s)
    )
    chart = bars(
        [(str(s), float(counts[s]), STATE_COLOURS[s]) for s in STATE_COLOURS if counts.get(s)]
    )
    total = sum(counts.values())
    summary = f"<p>{total} tasks, {attempts} attempts.</p>"
    return f'{summary}<div class="cards">{cards}</div>{chart}'


def failures(totals: AttemptTotals) -> str:
    chart = bars([(k, float(n), "#dc2626") for k, n in totals.kinds.most_common()])
    listed = table(
        ("kind", "code", "failed attempts"),
        ((k, c, n) for (k, c), n in totals.codes.most_common()),
    )
    return chart + (listed if totals.codes else "")


def timeline_section(found: Timeline | None) -> str:
    if found is None:
        return timeline(span_s=0, running=[], failed=[], waiting=[], marks=[])
    chart = timeline(
        span_s=found.span_s,
        running=found.running,
        failed=found.failed,
        waiting=found.waiting,
        marks=[(offset, _MARKS[change], label) for offset, change, label in found.marks],
    )
    legend = (
        '<p class="legend"><i style="background:#3b82f6"></i>attempts running '
        '<i style="background:#f59e0b"></i>tasks waiting (backoff, Retry-After, open circuit) '
        '<i style="background:#dc2626"></i>attempts failing; dashed lines: circuits opening '
        "(red), half-opening (amber), closing (green)</p>"
    )
    return chart + legend


def waits(totals: AttemptTotals, circuits: Iterable[CircuitEntry]) -> str:
    n = Counter(totals.waits)
    seconds = defaultdict(float, totals.waited_s)
    for e in circuits:
        if e.change is CircuitChange.WAITED:
            n["circuit_open"] += 1
            seconds["circuit_open"] += e.wait_s or 0.0
    rows = ((r, n[r], f"{seconds[r]:.1f}") for r in sorted(n))
    return (
        f"<p>{sum(totals.retries.values())} retries; {sum(seconds.values()):.1f} s spent "
        "waiting.</p>"
        + table(("wait", "count", "seconds"), rows)
        + table(("retried after", "retries"), totals.retries.most_common())
    )


def usage(found: UsageByModel) -> str:
    rows = found.rows
    listed = table(
        ("provider", "model", "input", "output", "cache read", "cache write", "cost USD"),
        (
            (p, m, int(r[0]), int(r[1]), int(r[2]), int(r[3]), f"{r[4]:.4f}")
            for (p, m), r in sorted(rows.items())
        ),
    )
    chart = bars(
        [(f"{p} {m}", round(r[4], 4), "#0ea5e9") for (p, m), r in sorted(rows.items())], unit=" $"
    )
    return listed + chart


def escalations(stored: Iterable[Escalation]) -> str:
    found = [e for e in stored if e.status is EscalationStatus.OPEN]
    if not found:
        return '<p class="none">none</p>'
    return table(
        ("id", "task", "kind", "code", "message", "since"),
        (
            (
                e.escalation_id,
                e.task_id,
                e.failure.kind,
                e.failure.code,
                redact(e.failure.message)[:EVIDENCE_CHARS],
                e.created_at.isoformat(timespec="seconds"),
            )
            for e in found
        ),
    )
