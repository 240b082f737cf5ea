"""``backstay escalations list | show | resolve``: the failures of a batch waiting for a
human (content policy, authentication, security, spent quotas, an agent's approvals),
and their decisions.

``resolve ID --action A`` moves the task; ``resolve ID --approve | --reject | --edit JSON``
decides the approval an agent run waits for (a tool call, or the framework's own request
for a human) in the batch's run store (``state.sqlite`` of the state directory, or the
batch's Redis: ``--store``) and moves the task with ``retry``: the next ``backstay
resume`` continues the run with the decision.

Those are two writes. When the first was made and the second was not (the command was
killed between them), the approval is decided and the escalation still open: the same
decision given again finishes the job (the escalation is resolved with ``retry``); a
different one is refused, naming ``resolve ID --action retry``, which moves the task on
with the decision recorded."""

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
from backstay.engine import (
    Engine,
    Escalation,
    InvalidTransition,
    ResolveAction,
    TaskState,
)
from backstay.errors import ConfigError
from backstay.runtime.decisions import approval_of, decide_escalated, edited_arguments
from backstay.runtime.records import Approval, ApprovalStatus
from backstay.runtime.run_stores import open_run_stores
from backstay.store.location import StoreLocation

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


def _open(state_dir: Path, store: str | None, sets: list[str] | None) -> Engine:
    try:
        location = _state.store_location(store, state_dir, sets=sets)
        return _state.open_engine(state_dir, location=location)
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
    sets: _state.SetOption = None,
    include_resolved: Annotated[
        bool, typer.Option("--all", help="Also list the resolved ones.")
    ] = False,
    as_json: _state.JsonOption = False,
) -> None:
    """The open escalations of the batch in --state-dir, oldest first."""
    with _open(state_dir, store, sets) as engine:
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
    sets: _state.SetOption = None,
    as_json: _state.JsonOption = False,
) -> None:
    """One escalation: the failure, what the attempt left (its directory, the tail of its
    output), the agent's pending approval (its tool or request, arguments as recorded:
    redacted) and, once resolved, the decision."""
    with _open(state_dir, store, sets) as engine:
        try:
            item = engine.escalations.get(escalation_id)
            approval = _approval(item, engine.store_location)
        except ConfigError as err:
            raise usage_error(err) from None
    if as_json:
        shown = item.to_dict()
        if approval is not None:
            shown["approval"] = {
                "id": approval.id,
                "tool": approval.tool,
                "arguments": dict(approval.arguments),
                "status": str(approval.status),
            }
        _print_json(shown)
        return
    table = Table(title=f"escalation {escalation_id}", show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    rows = _detail_rows(item)
    if approval is not None:
        rows += [
            ("approval", f"{approval.tool} ({approval.status})"),
            ("approval.arguments", _text(dict(approval.arguments))),
        ]
    for name, value in rows:
        table.add_row(escape(name), escape(value))
    console().print(table)


def _approval(item: Escalation, location: StoreLocation) -> Approval | None:
    """The agent approval the escalation's failure waits for, if any (and recorded)."""
    found = approval_of(item.failure)
    if found is None:
        return None
    tenant, approval_id = found
    with open_run_stores(location) as stores:
        every = stores.runs.approvals(tenant, open_only=False)
    return next((a for a in every if a.id == approval_id), None)


def _same_decision(
    approval: Approval, status: ApprovalStatus, edited: dict[str, object] | None
) -> bool:
    """Whether ``approval`` is decided as ``status`` (with ``edited``) would decide it."""
    if approval.status is not status:
        return False
    return status is not ApprovalStatus.EDITED or dict(approval.edited_arguments or {}) == edited


def _next_step(state: TaskState | None, state_dir: Path) -> str:
    if state is TaskState.PENDING:
        return f"; backstay resume --state-dir {state_dir} runs it"
    return ""


def _decision(
    approve: bool, reject: bool, edit: str | None, *, action: str | None
) -> ApprovalStatus | None:
    """The approval decision the flags ask for (``None``: ``--action`` is given instead);
    more than one, or none and no ``--action``, is an error."""
    chosen = [flag for flag, given in (("--approve", approve), ("--reject", reject)) if given]
    if edit is not None:
        chosen.append("--edit")
    if len(chosen) > 1:
        raise ConfigError(f"give one of them, not {' and '.join(chosen)}", where="decision")
    if bool(chosen) == (action is not None):
        raise ConfigError("give --action, or one of --approve, --reject, --edit", where="resolve")
    if not chosen:
        return None
    return {
        "--approve": ApprovalStatus.APPROVED,
        "--reject": ApprovalStatus.REJECTED,
        "--edit": ApprovalStatus.EDITED,
    }[chosen[0]]


def _decide_approval(
    engine: Engine,
    escalation_id: int,
    status: ApprovalStatus,
    *,
    edit: str | None,
    note: str,
) -> Approval:
    """Record the decision on the approval escalation ``escalation_id`` waits for; the
    approval as recorded when this very decision was recorded before (see the module)."""
    where = f"escalation {escalation_id}"
    item = engine.escalations.get(escalation_id)
    if item.action is not None:
        raise ConfigError(f"is already resolved ({item.action}); nothing was recorded", where=where)
    edited = None if edit is None else edited_arguments(edit)
    location = engine.store_location
    recorded = _approval(item, location)
    if recorded is not None and recorded.status.decided:
        if _same_decision(recorded, status, edited):
            return recorded
        raise ConfigError(
            f"its approval {recorded.id} is already {recorded.status}, and the escalation "
            f"was left open; backstay escalations resolve {escalation_id} --action retry "
            f"runs the task with that decision; nothing was recorded",
            where=where,
        )
    with open_run_stores(location) as stores:
        return decide_escalated(
            stores.runs, item.failure, status, edited=edited, note=note, where=where
        )


def resolve(
    escalation_id: IdArgument,
    state_dir: _state.StateDirOption,
    action: Annotated[
        str | None,
        typer.Option(
            "--action",
            help=f"One of {ACTIONS}: retry or resume run the task again (at the next "
            "backstay resume), fail fails it, skip cancels it.",
        ),
    ] = None,
    approve: Annotated[
        bool, typer.Option("--approve", help="Approve the agent's pending call or request.")
    ] = False,
    reject: Annotated[
        bool, typer.Option("--reject", help="Reject it: the call is not run, the agent is told.")
    ] = False,
    edit: Annotated[
        str | None,
        typer.Option(
            "--edit",
            metavar="JSON",
            help="Approve it with these arguments instead (a JSON object; for a "
            'framework\'s question, the answer, e.g. \'{"answer": "blue"}\').',
        ),
    ] = None,
    note: Annotated[
        str, typer.Option("--note", "--reason", help="Why; kept with the decision.")
    ] = "",
    as_json: _state.JsonOption = False,
    store: _state.StoreOption = None,
    sets: _state.SetOption = None,
) -> None:
    """Record a decision on an open escalation and move its task; for an agent's pending
    approval, --approve, --reject or --edit JSON decides it and the task is retried."""
    approval: Approval | None = None
    with _open(state_dir, store, sets) as engine:
        try:
            decision = _decision(approve, reject, edit, action=action)
            if decision is not None:
                approval = _decide_approval(engine, escalation_id, decision, edit=edit, note=note)
                action = str(ResolveAction.RETRY)
            resolved = engine.escalations.resolve(escalation_id, str(action), note)
        except ConfigError as err:
            where = "--action" if err.where == "action" else err.where
            raise usage_error(ConfigError(err.reason, where=where)) from None
        except InvalidTransition as err:
            kept = (
                "nothing was recorded"
                if approval is None
                else f"the approval is {approval.status} but the task was not moved"
            )
            raise usage_error(
                ConfigError(
                    f"its task is {err.current} now, where {action!r} does not apply; {kept}",
                    where=f"escalation {escalation_id}",
                )
            ) from None
        task = engine.store.task(resolved.operation_id)
    state = None if task is None else task.state
    if as_json:
        out = {"escalation": resolved.to_dict(), "task_state": state}
        if approval is not None:
            out["approval"] = {"id": approval.id, "tool": approval.tool, "status": approval.status}
        _print_json(out)
        return
    decided = "" if approval is None else f"{approval.tool} {approval.status}, "
    typer.echo(
        f"escalation {escalation_id} resolved ({decided}{resolved.action}): task "
        f"{task_label(resolved.operation_id)} is {state} now{_next_step(state, state_dir)}"
    )


app.command("list")(list_escalations)
app.command("show")(show)
app.command("resolve")(resolve)
