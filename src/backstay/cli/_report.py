"""How the engine commands show a batch: its summary as lines, its tasks as a table, and
both as JSON."""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from backstay.cli._state import batch_flags
from backstay.engine.states import TaskState
from backstay.errors import ConfigError
from backstay.idempotency.ids import parse_operation_id
from backstay.policy.spend import ScopeTotals

if TYPE_CHECKING:  # the engine's runner is imported by the commands that run it
    from backstay.engine import BatchIdentity, Engine, Summary, TaskRecord, TaskReport

_STYLES = {
    TaskState.SUCCEEDED: "green",
    TaskState.FAILED: "red",
    TaskState.CANCELLED: "red",
    TaskState.PAUSED: "yellow",
    TaskState.ESCALATED: "magenta",
}


def console() -> Console:
    """stdout; piped output (CI logs) gets a readable width instead of 80 columns."""
    return Console() if sys.stdout.isatty() else Console(width=200)


def task_label(operation_id: str) -> str:
    """``"hello/T0-run_01"`` for an operation id of a batch (the id itself otherwise)."""
    try:
        parts = parse_operation_id(operation_id)
    except ConfigError:
        return operation_id
    return f"{parts.task_id}/{parts.task_run_id}"


def _states(summary: Summary) -> str:
    counts = [f"{n} {state}" for state, n in summary.by_state.items() if n]
    return ", ".join(counts) or "nothing recorded"


def summary_lines(summary: Summary, *, state_dir: Path) -> list[str]:
    """A few lines: the counts by state, the work done, and what to do next (each command
    with the flags that name this batch: ``batch_flags``)."""
    flags = batch_flags(state_dir)
    usage = summary.usage
    cost = "" if usage.cost_usd is None else f", cost ${usage.cost_usd:.4f}"
    lines = [
        f"{summary.total} task{'' if summary.total == 1 else 's'}: {_states(summary)}",
        f"  {summary.attempts} attempts, waited {summary.waited_s:.1f} s, tokens "
        f"{usage.prompt_tokens} in / {usage.output_tokens} out{cost}",
    ]
    if summary.failures_by_kind:
        kinds = ", ".join(f"{kind} {n}" for kind, n in summary.failures_by_kind.items())
        lines.append(f"  failed attempts by kind: {kinds}")
    if summary.circuit_trips or summary.circuit_waits:
        lines.append(f"  circuits: {circuit_text(summary)}")
    if summary.fell_back:
        lines.append(f"  fallbacks: {fallback_text(summary)}")
    if summary.open_escalations:
        lines.append(
            f"  {summary.open_escalations} open escalation"
            f"{'' if summary.open_escalations == 1 else 's'}: "
            f"backstay escalations list {flags}"
        )
    lines += [f"  budget: {spending_text(t)}" for t in summary.spending if not t.budget.unlimited]
    if summary.budget_paused:
        n = summary.budget_paused
        lines.append(
            f"  {n} task{'' if n == 1 else 's'} paused at a spending budget (budget_exceeded): "
            f"backstay resume {flags} --budget-usd AMOUNT (or a raised budget "
            "in the suite, then backstay batch) continues them"
        )
    if summary.next_resume_at is not None:
        lines.append(
            f"  paused until {summary.next_resume_at.isoformat(timespec='seconds')} at the "
            f"earliest: backstay resume {flags} continues after that"
        )
    ended = [s for s in (TaskState.FAILED, TaskState.CANCELLED) if summary.count(s)]
    if ended:
        which = " or ".join(str(s) for s in ended)
        lines.append(
            f"  {which}: backstay retry TASK... {flags} (or --state {ended[0]}) re-opens "
            "them for the next backstay resume"
        )
    return lines


def spending_text(totals: ScopeTotals) -> str:
    """``"batch: $0.0415 of $0.05, 415 tokens (no limit)"``: spent (and reserved) against
    the budget."""
    budget, spent, held = totals.budget, totals.spent, totals.reserved
    usd_limit = "no limit" if budget.usd is None else f"of ${budget.usd:g}"
    token_limit = "no limit" if budget.tokens is None else f"of {budget.tokens}"
    text = (
        f"{totals.scope.label}: ${spent.usd:.4f} ({usd_limit}), "
        f"{spent.tokens} tokens ({token_limit})"
    )
    if held.tokens or held.usd:
        text += f"; ${held.usd:.4f} and {held.tokens} tokens reserved by attempts in flight"
    return text


def circuit_text(summary: Summary) -> str:
    """``"2 trips (anthropic-api/m 2); tasks waited 5 times, 18.0 s"``."""
    trips = summary.circuit_trips
    where = ", ".join(f"{name} {n}" for name, n in summary.trips_by_breaker.items())
    text = f"{trips} trip{'' if trips == 1 else 's'}" + (f" ({where})" if where else "")
    waits = summary.circuit_waits
    return (
        f"{text}; tasks waited {waits} time{'' if waits == 1 else 's'}, "
        f"{summary.circuit_waited_s:.1f} s"
    )


def fallback_text(summary: Summary) -> str:
    """``"1 task answered by a fallback; answers by model: a/m 2, b/n 1"``."""
    n = summary.fell_back
    answers = ", ".join(f"{name} {count}" for name, count in summary.answers_by_model.items())
    return (
        f"{n} task{'' if n == 1 else 's'} answered by a fallback; "
        f"answers by model: {answers or 'none'}"
    )


def model_text(report: TaskReport | None, record: TaskRecord) -> str:
    """``"adapter/model"`` requested, with ``" -> adapter/model"`` when another answered."""
    requested = f"{record.spec.adapter}/{record.spec.model}"
    if report is None or not report.fell_back:
        return requested
    return f"{requested} -> {report.answered}"


def summary_table(summary: Summary, *, title: str) -> Table:
    """The summary as a two-column table: tasks by state, failed attempts by kind,
    attempts, waits (retries and open circuits), circuit trips, escalations, tokens, cost."""
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("", overflow="fold")
    states = [
        f"[{_STYLES.get(state, '')}]{n} {state}[/]" if _STYLES.get(state) else f"{n} {state}"
        for state, n in summary.by_state.items()
        if n
    ]
    table.add_row("tasks", f"{summary.total}: " + ", ".join(states))
    kinds = ", ".join(f"{kind} {n}" for kind, n in summary.failures_by_kind.items())
    table.add_row("failed attempts by kind", escape(kinds) or "none")
    table.add_row("attempts", str(summary.attempts))
    table.add_row(
        "time spent waiting",
        f"{summary.waited_s:.1f} s before retries; {summary.circuit_waited_s:.1f} s for open "
        f"circuits ({summary.circuit_waits} wait{'' if summary.circuit_waits == 1 else 's'})",
    )
    where = ", ".join(f"{name} {n}" for name, n in summary.trips_by_breaker.items())
    table.add_row(
        "circuit trips", f"{summary.circuit_trips}" + (f" ({escape(where)})" if where else "")
    )
    if summary.fell_back:
        table.add_row("fallbacks", escape(fallback_text(summary)))
    table.add_row("open escalations", str(summary.open_escalations))
    usage = summary.usage
    table.add_row("tokens", f"{usage.prompt_tokens} in / {usage.output_tokens} out")
    table.add_row("cost", "unknown" if usage.cost_usd is None else f"${usage.cost_usd:.4f}")
    budgets = [spending_text(t) for t in summary.spending if not t.budget.unlimited]
    if budgets:
        table.add_row("budgets", escape("; ".join(budgets)))
        table.add_row("paused at a budget", str(summary.budget_paused))
    return table


def print_summary(summary: Summary, *, state_dir: Path, title: str) -> None:
    out = console()
    out.print(escape(title), style="bold", highlight=False)
    for line in summary_lines(summary, state_dir=state_dir):
        out.print(escape(line), highlight=False)


def report_run(
    engine: Engine,
    summary: Summary,
    *,
    operations: Collection[str] | None,
    state_dir: Path,
    title: str,
) -> None:
    """After a run: the summary, then the tasks of ``operations`` (every task with
    ``None``) that did not succeed."""
    print_summary(summary, state_dir=state_dir, title=title)
    unsettled = [
        record
        for record in engine.store.tasks()
        if (operations is None or record.operation_id in operations)
        and record.state is not TaskState.SUCCEEDED
    ]
    if unsettled:
        console().print(tasks_table(unsettled, title="tasks that did not succeed", summary=summary))


def _when(record: TaskRecord) -> str:
    if record.next_run_at is None or record.state not in (TaskState.PAUSED, TaskState.RETRYING):
        return "-"
    return record.next_run_at.isoformat(timespec="seconds")


def tasks_table(
    records: Iterable[TaskRecord],
    *,
    title: str,
    summary: Summary | None = None,
    shown: Mapping[str, str] | None = None,
) -> Table:
    """One row per task: its run, state (as ``shown`` names it, by operation id, else as
    stored), model (requested, and the one that answered when a fallback did, from
    ``summary``), attempts, reason and when it may run next."""
    reports = {} if summary is None else {r.operation_id: r for r in summary.tasks}
    table = Table(title=title, title_justify="left")
    for column in ("task", "state", "model", "attempts", "reason", "next run"):
        table.add_column(column, overflow="fold")
    for record in records:
        state = (shown or {}).get(record.operation_id, str(record.state))
        style = _STYLES.get(record.state, "") if state == record.state else "red"
        table.add_row(
            escape(task_label(record.operation_id)),
            f"[{style}]{state}[/]" if style else state,
            escape(model_text(reports.get(record.operation_id), record)),
            str(record.attempts_used),
            escape(record.reason),
            _when(record),
        )
    return table


def status_data(
    summary: Summary,
    records: Sequence[TaskRecord],
    *,
    state_dir: Path,
    identity: BatchIdentity | None,
) -> dict[str, Any]:
    """The summary as JSON data, with the batch it belongs to and, per task, its run
    label and when it may run next."""
    data = summary.to_dict()
    by_op = {record.operation_id: record for record in records}
    for task in data["tasks"]:
        record = by_op.get(task["operation_id"])
        task["run"] = task_label(task["operation_id"])
        task["next_run_at"] = (
            None if record is None or record.next_run_at is None else record.next_run_at.isoformat()
        )
    return {
        "state_dir": str(state_dir),
        "batch": None if identity is None else identity.to_dict(),
        **data,
    }
