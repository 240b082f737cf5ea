"""The HTML report as it was made before it was read a page at a time: every task,
attempt and spec read into a ``StateSnapshot`` and decoded. Kept only as the reference the
report of ``backstay.observe.report`` must match (tests/observe/test_report_pages.py):
the same sections and numbers, made the straightforward way."""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from html import escape
from pathlib import Path
from typing import Final

from backstay.engine.circuit_log import CircuitChange, CircuitEntry
from backstay.engine.records import AttemptOutcome, AttemptRecord, EscalationStatus, TaskRecord
from backstay.engine.states import TaskState
from backstay.failure import Failure
from backstay.observe.genai import provider_name
from backstay.observe.report._svg import bars, timeline
from backstay.observe.snapshot import StateSnapshot
from backstay.redact import redact

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
_BINS: Final = 240
_MAX_MARKS: Final = 200
_EVIDENCE_CHARS: Final = 400
# Problems first, so a reader of a large batch finds them at the top.
_ORDER: Final = {state: i for i, state in enumerate(reversed(list(STATE_COLOURS)))}


def _table(head: Iterable[str], rows: Iterable[Iterable[object]], cls: str = "") -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def attempts_by_task(snap: StateSnapshot) -> dict[str, list[AttemptRecord]]:
    out: defaultdict[str, list[AttemptRecord]] = defaultdict(list)
    for attempt in snap.attempts:
        out[attempt.operation_id].append(attempt)
    return out


def outcome(snap: StateSnapshot) -> str:
    states = Counter(t.state for t in snap.tasks)
    cards = "".join(
        f'<div class="card" style="border-color:{STATE_COLOURS[s]}"><b>{states[s]}</b>'
        f"<span>{s}</span></div>"
        for s in STATE_COLOURS
        if states[s]
    )
    chart = bars([(str(s), float(states[s]), STATE_COLOURS[s]) for s in STATE_COLOURS if states[s]])
    total = len(snap.tasks)
    summary = f"<p>{total} tasks, {len(snap.attempts)} attempts.</p>"
    return f'{summary}<div class="cards">{cards}</div>{chart}'


def failures(snap: StateSnapshot) -> str:
    kinds = Counter(str(a.failure.kind) for a in snap.attempts if a.failure is not None)
    codes = Counter(
        (str(a.failure.kind), a.failure.code) for a in snap.attempts if a.failure is not None
    )
    chart = bars([(k, float(n), "#dc2626") for k, n in kinds.most_common()])
    table = _table(
        ("kind", "code", "failed attempts"), ((k, c, n) for (k, c), n in codes.most_common())
    )
    return chart + (table if codes else "")


def timeline_section(snap: StateSnapshot) -> str:
    if not snap.attempts:
        return timeline(span_s=0, running=[], failed=[], waiting=[], marks=[])
    t0 = min(a.started_at for a in snap.attempts)
    ends = [a.ended_at or snap.taken_at for a in snap.attempts]
    span = max([max(ends) - t0, *(e.at - t0 for e in snap.circuits)]).total_seconds() or 1.0

    def at(seconds: float) -> int:
        return min(max(int(seconds / span * _BINS), 0), _BINS - 1)

    running = [0] * (_BINS + 1)
    waiting = [0] * (_BINS + 1)
    failed = [0] * _BINS
    for attempt, end in zip(snap.attempts, ends, strict=True):
        start_s, end_s = (attempt.started_at - t0).total_seconds(), (end - t0).total_seconds()
        running[at(start_s)] += 1
        running[at(end_s) + 1] -= 1
        if attempt.outcome is AttemptOutcome.FAILED:
            failed[at(end_s)] += 1
        if attempt.delay_s:
            waiting[at(end_s)] += 1
            waiting[at(end_s + attempt.delay_s) + 1] -= 1
    marks: list[tuple[float, str, str]] = []
    for entry in snap.circuits:
        offset = (entry.at - t0).total_seconds()
        if entry.change is CircuitChange.WAITED:
            waiting[at(offset)] += 1
            waiting[at(offset + (entry.wait_s or 0.0)) + 1] -= 1
        elif len(marks) < _MAX_MARKS:
            marks.append((offset, _MARKS[entry.change], f"{entry.breaker} {entry.change}"))
    chart = timeline(
        span_s=span,
        running=_running_sum(running),
        failed=failed,
        waiting=_running_sum(waiting),
        marks=marks,
    )
    legend = (
        '<p class="legend"><i style="background:#3b82f6"></i>attempts running '
        '<i style="background:#f59e0b"></i>tasks waiting (backoff, Retry-After, open circuit) '
        '<i style="background:#dc2626"></i>attempts failing; dashed lines: circuits opening '
        "(red), half-opening (amber), closing (green)</p>"
    )
    return chart + legend


def _running_sum(diff: list[int]) -> list[int]:
    out, level = [], 0
    for value in diff[:-1]:
        level += value
        out.append(level)
    return out


def waits(snap: StateSnapshot) -> str:
    n: Counter[str] = Counter()
    seconds: defaultdict[str, float] = defaultdict(float)
    retries: Counter[str] = Counter()
    for a in snap.attempts:
        if a.failure is not None and a.delay_s is not None:
            retries[str(a.failure.kind)] += 1
            reason = "backoff" if a.failure.retry_after_s is None else "retry_after"
            n[reason] += 1
            seconds[reason] += a.delay_s
    for e in snap.circuits:
        if e.change is CircuitChange.WAITED:
            n["circuit_open"] += 1
            seconds["circuit_open"] += e.wait_s or 0.0
    rows = ((r, n[r], f"{seconds[r]:.1f}") for r in sorted(n))
    return (
        f"<p>{sum(retries.values())} retries; {sum(seconds.values()):.1f} s spent waiting.</p>"
        + _table(("wait", "count", "seconds"), rows)
        + _table(("retried after", "retries"), retries.most_common())
    )


def usage(snap: StateSnapshot) -> str:
    specs = {t.operation_id: t.spec for t in snap.tasks}
    rows: dict[tuple[str, str], list[float]] = {}
    for a in snap.attempts:
        spec = specs.get(a.operation_id)
        if spec is None:
            continue
        key = (provider_name(spec.adapter, spec.model), spec.model)
        row = rows.setdefault(key, [0, 0, 0, 0, 0.0])
        u = a.usage
        row[0] += u.input_tokens
        row[1] += u.output_tokens
        row[2] += u.cache_read_tokens
        row[3] += u.cache_write_tokens
        row[4] += u.cost_usd or 0.0
    table = _table(
        ("provider", "model", "input", "output", "cache read", "cache write", "cost USD"),
        (
            (p, m, int(r[0]), int(r[1]), int(r[2]), int(r[3]), f"{r[4]:.4f}")
            for (p, m), r in sorted(rows.items())
        ),
    )
    chart = bars(
        [(f"{p} {m}", round(r[4], 4), "#0ea5e9") for (p, m), r in sorted(rows.items())], unit=" $"
    )
    return table + chart


def escalations(snap: StateSnapshot) -> str:
    found = [e for e in snap.escalations if e.status is EscalationStatus.OPEN]
    if not found:
        return '<p class="none">none</p>'
    return _table(
        ("id", "task", "kind", "code", "message", "since"),
        (
            (
                e.escalation_id,
                e.task_id,
                e.failure.kind,
                e.failure.code,
                redact(e.failure.message)[:_EVIDENCE_CHARS],
                e.created_at.isoformat(timespec="seconds"),
            )
            for e in found
        ),
    )


def _evidence(failure: Failure) -> str:
    details = json.dumps(dict(failure.details), default=str, sort_keys=True)
    status = "" if failure.status is None else f" HTTP {failure.status}"
    text = f"{failure.kind}/{failure.code}{status}: {failure.message} {details}"
    return escape(redact(text)[:_EVIDENCE_CHARS])


def _link(path: str, base: Path) -> str:
    try:
        rel = os.path.relpath(path, base)
    except ValueError:
        rel = path
    return f'<a href="{escape(rel)}/">logs</a>'


def _attempt_item(a: AttemptRecord, base: Path) -> str:
    text = f"attempt {a.number} {a.outcome}"
    if a.ended_at is not None:
        text += f" after {(a.ended_at - a.started_at).total_seconds():.1f} s"
    if a.delay_s is not None:
        text += f", retry in {a.delay_s:.2f} s"
    evidence = "" if a.failure is None else f"<br><code>{_evidence(a.failure)}</code>"
    return f"<li>{text} {_link(a.output_dir, base)}{evidence}</li>"


def models(task: TaskRecord, attempts: list[AttemptRecord]) -> tuple[str, str]:
    """The model ``task`` asked for and the one that answered: a success's stored result
    names it; otherwise the fallback candidate of its last attempt (the task's own model
    when it has none)."""
    result = task.result or {}
    requested = str(result.get("requested_model") or task.spec.model)
    if result.get("model"):
        return requested, str(result["model"])
    last = attempts[-1].candidate if attempts else None
    for candidate in task.spec.candidates:
        if candidate.name == last:
            return requested, candidate.model
    return requested, task.spec.model


def tasks(snap: StateSnapshot, base: Path) -> str:
    """Every task, problems first; a task with failures shows each attempt's evidence."""
    by_task = attempts_by_task(snap)
    ordered: list[TaskRecord] = sorted(snap.tasks, key=lambda t: _ORDER[t.state])
    rows = []
    for task in ordered:
        attempts = by_task.get(task.operation_id, [])
        label = f"{task.task_id}/{task.spec.task_run_id}"
        tokens = sum(a.usage.tokens_total for a in attempts)
        last = _link(attempts[-1].output_dir, base) if attempts else ""
        requested, answering = models(task, attempts)
        moved = "" if answering == requested else ' class="fell-back"'
        rows.append(
            f'<tr class="s-{task.state}"><td>{escape(label)}</td><td>{task.state}</td>'
            f"<td>{escape(requested)}</td><td{moved}>{escape(answering)}</td>"
            f"<td>{len(attempts)}</td><td>{tokens}</td><td>{last}</td></tr>"
        )
        if any(a.failure is not None for a in attempts) or task.state is not TaskState.SUCCEEDED:
            items = "".join(_attempt_item(a, base) for a in attempts)
            rows.append(
                f'<tr class="more"><td colspan="7"><details><summary>{escape(redact(task.reason))}'
                f"</summary><ol>{items}</ol></details></td></tr>"
            )
    head = (
        "<tr><th>task</th><th>state</th><th>requested model</th><th>answering model</th>"
        "<th>attempts</th><th>tokens</th><th>last attempt</th></tr>"
    )
    return f'<table class="tasks"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


_STATES = {
    CircuitChange.OPENED: "open",
    CircuitChange.HALF_OPENED: "half-open",
    CircuitChange.CLOSED: "closed",
}


def _row(breaker: str, entries: list[CircuitEntry]) -> str:
    changes = Counter(e.change for e in entries)
    reasons = Counter(
        e.reason.replace("_", " ") for e in entries if e.change is CircuitChange.OPENED
    )
    waited = sum(e.wait_s or 0.0 for e in entries if e.change is CircuitChange.WAITED)
    moves = [e for e in entries if e.change in _STATES]
    last = "closed" if not moves else _STATES[moves[-1].change]
    why = ", ".join(f"{reason or 'tripped'} ×{n}" for reason, n in reasons.most_common())
    cells = (
        breaker,
        str(changes[CircuitChange.OPENED]),
        why or "-",
        str(changes[CircuitChange.HALF_OPENED]),
        str(changes[CircuitChange.CLOSED]),
        f"{changes[CircuitChange.WAITED]} ({waited:.1f} s)",
        last,
    )
    return "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in cells) + "</tr>"


def circuits(snap: StateSnapshot) -> str:
    """The section's HTML: one row per circuit, or a line saying none opened."""
    by_breaker: defaultdict[str, list[CircuitEntry]] = defaultdict(list)
    for entry in sorted(snap.circuits, key=lambda e: e.at):
        by_breaker[entry.breaker].append(entry)
    if not by_breaker:
        return '<p class="none">No circuit opened: every provider and model answered.</p>'
    head = ("circuit", "opened", "why", "probes", "closed", "tasks waited", "last state")
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    rows = "".join(_row(breaker, entries) for breaker, entries in sorted(by_breaker.items()))
    return f"<table><thead><tr>{th}</tr></thead><tbody>{rows}</tbody></table>"


_CSS: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#111;
padding:0 16px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 10px;text-align:left}
thead th{background:#f3f4f6}tbody tr:nth-child(even){background:#fafafa}
table.tasks{width:100%;table-layout:fixed}table.tasks th:first-child{width:45%}
.cards{display:flex;gap:10px;flex-wrap:wrap}.card{border-left:5px solid;padding:4px 12px;
background:#f9fafb}.card b{font-size:20px;margin-right:6px}
.chart text{font-size:12px;fill:#333}.none{color:#777}.legend i{display:inline-block;width:10px;
height:10px;margin:0 4px 0 10px}code{font-size:12px;white-space:pre-wrap;color:#7f1d1d}
.s-failed td:nth-child(2){color:#dc2626}.s-escalated td:nth-child(2){color:#a855f7}
.s-paused td:nth-child(2){color:#b45309}.s-succeeded td:nth-child(2){color:#16a34a}
section{content-visibility:auto;contain-intrinsic-size:auto 600px}
"""
# Records in the page when it was laid out, for the render-time check of the tests.
_TIMING: Final = (
    "<script>addEventListener('load',function(){document.body.setAttribute("
    "'data-rendered-ms',String(Math.round(performance.now())))})</script>"
)


def render_report(snap: StateSnapshot, *, base: Path, title: str | None = None) -> str:
    """The report of ``snap`` as HTML; links to attempt logs are relative to ``base``
    (the folder the file is written to)."""
    name = title or f"backstay report: {snap.state_dir}"
    parts = [
        ("outcome", "Outcome", outcome(snap)),
        ("failures", "Failures by kind", failures(snap)),
        ("timeline", "Timeline", timeline_section(snap)),
        ("waits", "Retries and waiting", waits(snap)),
        ("circuits", "Circuits", circuits(snap)),
        ("usage", "Tokens and cost", usage(snap)),
        ("escalations", "Open escalations", escalations(snap)),
        ("tasks", "Tasks", tasks(snap, base)),
    ]
    body = "".join(
        f'<section id="{key}"><h2>{head}</h2>{html}</section>' for key, head, html in parts
    )
    made = snap.taken_at.astimezone(_dt.UTC).isoformat(timespec="seconds")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(redact(name))}</title><style>{_CSS}</style></head><body>"
        f'<h1>{escape(redact(name))}</h1><p class="none">as of {made}</p>{body}{_TIMING}'
        "</body></html>"
    )
