"""``backstay escalations list | show | resolve``: the failures of a batch waiting for a
human (content policy, authentication, security, spent quotas), and their decisions."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from backstay.cli import _state
from backstay.cli._errors import usage_error
from backstay.cli._report import console, task_label
from backstay.engine import Engine, Escalation, InvalidTransition, ResolveAction, TaskState
from backstay.errors import ConfigError

app = typer.Typer(
    name="escalations",
    help="The failures of a batch waiting for a human, and their decisions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

IdArgument = Annotated[
    int, typer.Argument(metavar="ID", help="The escalation's id (see escalations list).")
]
ACTIONS = ", ".join(action.value for action in ResolveAction)


def _open(state_dir: Path, store: str | None) -> Engine:
    try:
        return _state.open_engine(state_dir, location=_state.store_location(store, state_dir))
    except ConfigError as err:
        raise usage_error(err) from None


def _print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _list_table(found: tuple[Escalation, ...], *, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("id", "task", "status", "failure", "opened", "reason"):
        table.add_column(column, overflow="fold")
    for item in found:
        status = str(item.status) if item.action is None else f"{item.status}: {item.action}"
        table.add_row(
            str(item.escalation_id),
            escape(task_label(item.operation_id)),
            status,
            f"{item.failure.kind} ({item.failure.code})",
            item.created_at.isoformat(timespec="seconds"),
            escape(str(item.context.get("reason", item.failure.message or "-"))),
        )
    return table


def list_escalations(
    state_dir: _state.StateDirOption,
    store: _state.StoreOption = None,
    include_resolved: Annotated[
        bool, typer.Option("--all", help="Also list the resolved ones.")
    ] = False,
    as_json: _state.JsonOption = False,
) -> None:
    """The open escalations of the batch in --state-dir, oldest first."""
    with _open(state_dir, store) as engine:
        found = engine.escalations.list(include_resolved=include_resolved)
    if as_json:
        _print_json([item.to_dict() for item in found])
        return
    if not found:
        typer.echo("no open escalations" if not include_resolved else "no escalations")
        return
    console().print(_list_table(found, title="escalations"))


def _detail_rows(item: Escalation) -> list[tuple[str, str]]:
    failure = item.failure
    rows = [
        ("id", str(item.escalation_id)),
        ("task", task_label(item.operation_id)),
        ("operation", item.operation_id),
        ("status", str(item.status)),
        ("opened", item.created_at.isoformat(timespec="seconds")),
        ("failure", f"{failure.kind} ({failure.code})"),
        ("message", failure.message or "-"),
        ("resets at", failure.resets_at.isoformat() if failure.resets_at else "-"),
    ]
    rows += [(f"context.{key}", _text(value)) for key, value in item.context.items()]
    if item.action is not None:
        when = "-" if item.resolved_at is None else item.resolved_at.isoformat(timespec="seconds")
        rows += [
            ("action", str(item.action)),
            ("note", item.note or "-"),
            ("resolved", f"{when} by {item.resolved_by or '-'}"),
        ]
    return rows


def _text(value: object) -> str:
    if value is None or value == "":
        return "-"
    return value if isinstance(value, str) else json.dumps(value, default=str)


def show(
    escalation_id: IdArgument,
    state_dir: _state.StateDirOption,
    store: _state.StoreOption = None,
    as_json: _state.JsonOption = False,
) -> None:
    """One escalation: the failure, what the attempt left (its directory, the tail of its
    output) and, once resolved, the decision."""
    with _open(state_dir, store) as engine:
        try:
            item = engine.escalations.get(escalation_id)
        except ConfigError as err:
            raise usage_error(err) from None
    if as_json:
        _print_json(item.to_dict())
        return
    table = Table(title=f"escalation {escalation_id}", show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for name, value in _detail_rows(item):
        table.add_row(escape(name), escape(value))
    console().print(table)


def _next_step(state: TaskState | None, state_dir: Path) -> str:
    if state is TaskState.PENDING:
        return f"; backstay resume --state-dir {state_dir} runs it"
    return ""


def resolve(
    escalation_id: IdArgument,
    state_dir: _state.StateDirOption,
    action: Annotated[
        str,
        typer.Option(
            "--action",
            help=f"One of {ACTIONS}: retry or resume run the task again (at the next "
            "backstay resume), fail fails it, skip cancels it.",
        ),
    ],
    note: Annotated[str, typer.Option("--note", help="Why; kept with the decision.")] = "",
    as_json: _state.JsonOption = False,
    store: _state.StoreOption = None,
) -> None:
    """Record a decision on an open escalation and move its task."""
    with _open(state_dir, store) as engine:
        try:
            resolved = engine.escalations.resolve(escalation_id, action, note)
        except ConfigError as err:
            where = "--action" if err.where == "action" else err.where
            raise usage_error(ConfigError(err.reason, where=where)) from None
        except InvalidTransition as err:
            raise usage_error(
                ConfigError(
                    f"its task is {err.current} now, where {action!r} does not apply; "
                    "nothing was recorded",
                    where=f"escalation {escalation_id}",
                )
            ) from None
        task = engine.store.task(resolved.operation_id)
    state = None if task is None else task.state
    if as_json:
        _print_json({"escalation": resolved.to_dict(), "task_state": state})
        return
    typer.echo(
        f"escalation {escalation_id} resolved ({resolved.action}): task "
        f"{task_label(resolved.operation_id)} is {state} now{_next_step(state, state_dir)}"
    )


app.command("list")(list_escalations)
app.command("show")(show)
app.command("resolve")(resolve)
