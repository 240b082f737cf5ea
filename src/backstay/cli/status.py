"""``backstay status``: where the batch of a state directory stands — the tasks counted
per state, and the tasks that need a person — as lines and a table, or as JSON with
``--json`` (streamed: ``backstay.cli._status_json``).

It reads the store's counters and index (``backstay.engine.task_index``), so its cost
follows what it shows, not the size of the batch: by default the tasks that need a person
(failed, paused, escalated, running, interrupted), the first ``DEFAULT_LIMIT`` of them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import typer
from rich.markup import escape

from backstay._private import make_private_dirs
from backstay.cli import _faults, _state
from backstay.cli._errors import usage_error
from backstay.engine.suite_batch import read_identity
from backstay.errors import ConfigError
from backstay.observe.batch_view import (
    INTERRUPTED,
    NEEDS_A_PERSON,
    SHOWN_STATES,
    BatchView,
    LeaseHolders,
    Selection,
    parse_states,
)
from backstay.store.location import StoreKind, StoreLocation

if TYPE_CHECKING:
    from backstay.engine.registration import Registration
    from backstay.engine.stores import StoreBundle
    from backstay.store.redis.status_reads import RespReads

# How many tasks the table lists unless --limit or --all says otherwise.
DEFAULT_LIMIT: Final = 50
_ORDER: Final = {state: i for i, state in enumerate(SHOWN_STATES)}

StateFilter = Annotated[
    list[str] | None,
    typer.Option(
        "--state",
        metavar="STATE",
        help="Only tasks in STATE (repeatable): " + ", ".join(SHOWN_STATES) + ".",
    ),
]
TaskGlob = Annotated[
    str | None,
    typer.Option(
        "--task",
        metavar="GLOB",
        help="Only tasks whose task id matches GLOB (shell-style: *, ?, [seq], [!seq]).",
    ),
]
Limit = Annotated[
    int | None,
    typer.Option(
        "--limit",
        metavar="N",
        help=f"List at most N tasks (default {DEFAULT_LIMIT}; with --json: all).",
    ),
]
ShowAll = Annotated[
    bool,
    typer.Option("--all", help="List every selected task, of every state unless --state."),
]


def _selection(
    states: list[str] | None, task: str | None, show_all: bool, *, as_json: bool
) -> Selection:
    chosen = parse_states(states)
    if chosen is None and task is None and not show_all and not as_json:
        chosen = NEEDS_A_PERSON
    return Selection(states=chosen, task_glob=task)


def _limit(limit: int | None, show_all: bool, *, as_json: bool) -> int | None:
    if limit is not None and limit < 1:
        raise ConfigError(f"must be 1 or more, got {limit}", where="--limit")
    if limit is not None and show_all:
        raise ConfigError("--limit and --all exclude each other: give one", where="--limit")
    if show_all or as_json:
        return limit
    return DEFAULT_LIMIT if limit is None else limit


def _what(selection: Selection) -> str:
    if selection.states == NEEDS_A_PERSON and selection.task_glob is None:
        return "tasks that need a person (failed, paused, escalated, running, interrupted)"
    parts = []
    if selection.states is not None:
        parts.append("state " + ", ".join(sorted(selection.states, key=_ORDER.__getitem__)))
    if selection.task_glob is not None:
        parts.append(f"task {selection.task_glob}")
    return "tasks" + (f" ({'; '.join(parts)})" if parts else "")


def _light_reads(state_dir: Path, location: StoreLocation) -> RespReads | None:
    """The reads of a batch in Redis without redis-py (``store.redis.status_reads``),
    opened and checked as ``_state.open_batch_stores`` opens the stores (its warnings
    said, the same ``ConfigError`` when it holds no batch); ``None`` where the full
    stores must read it."""
    from backstay.store.redis.status_reads import open_status_reads  # noqa: PLC0415

    if location.kind is not StoreKind.REDIS:
        return None
    _faults.using(state_dir, location.display)
    _state.check_not_a_file(state_dir)
    make_private_dirs(state_dir)
    reads = open_status_reads(location, secrets=os.environ)
    if reads is None:
        return None
    for warning in reads.warnings:
        _state.say(f"warning: {warning}")
    if not any(reads.state_counts().values()):
        reads.close()
        raise ConfigError(
            f"{location.display} holds no batch in namespace {location.namespace!r} "
            "(start one with backstay batch --store …)",
            where="--store",
        )
    return reads


def _no_header() -> Registration | None:
    return None


def _open(
    state_dir: Path, location: StoreLocation, *, as_json: bool
) -> tuple[
    object, LeaseHolders, Callable[[], Registration | None], Callable[[], None], StoreBundle | None
]:
    """What ``status`` reads the batch through: its task index, its leases, its recording
    header (``engine.registration``), how to close them, and the stores (``None`` when
    read without redis-py, which ``--json`` never is)."""
    from backstay.engine.registration import PagedRegistration  # noqa: PLC0415

    light = None if as_json else _light_reads(state_dir, location)
    if light is not None:
        return light, light, light.registration, light.close, None
    # The batch's stores, read: not the engine, which would only import its runner.
    stores = _state.open_batch_stores(state_dir, location=location)
    tasks = stores.tasks
    header = tasks.registration if isinstance(tasks, PagedRegistration) else _no_header
    return tasks, stores.operations, header, stores.close, stores


def status(
    state_dir: _state.StateDirOption,
    as_json: _state.JsonOption = False,
    store: _state.StoreOption = None,
    sets: _state.SetOption = None,
    states: StateFilter = None,
    task: TaskGlob = None,
    limit: Limit = None,
    show_all: ShowAll = False,
) -> None:
    """The batch in --state-dir: its tasks counted per state, and the tasks that need a
    person (failed, paused, escalated, running, interrupted), the first 50 of them.

    --state, --task, --limit and --all choose other tasks to list; --json prints the
    summary and every task (or those chosen), streamed. A running task that no live
    process holds (its runner was stopped or killed) is shown as interrupted: backstay
    resume continues it. Changes nothing; safe while the batch runs. Exit code 0, or 2
    when --state-dir holds no batch (or a damaged one) or a flag is wrong.
    """
    from backstay.cli._report import console, tasks_table  # noqa: PLC0415 - not for --help
    from backstay.engine.summary import summarize  # noqa: PLC0415
    from backstay.engine.task_index import TaskIndex  # noqa: PLC0415

    try:
        selection = _selection(states, task, show_all, as_json=as_json)
        shown_limit = _limit(limit, show_all, as_json=as_json)
        location = _state.store_location(store, state_dir, sets=sets)
        tasks, leases, read_header, close, stores = _open(state_dir, location, as_json=as_json)
        identity = read_identity(state_dir)
    except ConfigError as err:
        raise usage_error(err) from None
    try:
        if not isinstance(tasks, TaskIndex):
            raise usage_error(ConfigError("this store keeps no task index", where="--store"))
        view = BatchView(tasks, leases)
        if as_json and stores is not None:
            from backstay.cli._status_json import write_status_json  # noqa: PLC0415

            write_status_json(
                sys.stdout,
                view,
                selection=selection,
                limit=shown_limit,
                state_dir=state_dir,
                identity=identity,
                circuits=stores.circuit_log.entries(),
                spending=stores.spend.overview(),  # Engine.spending
            )
            return
        name = "" if identity is None else f" {identity.workflow_id}"
        flags = _state.batch_flags(state_dir, location)
        out = console()
        out.print(escape(f"backstay status{name} ({state_dir})"), style="bold", highlight=False)
        counts = view.counts()
        total = sum(counts.values())
        listed = ", ".join(f"{n} {state}" for state, n in counts.items() if n)
        out.print(escape(f"{total} task{'' if total == 1 else 's'}: {listed or 'none'}"))
        header = read_header()
        if header is not None:  # recorded a page at a time (engine.registration)
            out.print(
                escape(
                    f"  recording: {header.recorded} of the batch's {header.total} tasks "
                    f"recorded so far; if its runner stopped, backstay resume {flags} "
                    "records the rest"
                ),
                highlight=False,
            )
        waiting = tasks.open_escalation_count()
        if waiting:
            out.print(
                escape(
                    f"  {waiting} open escalation{'' if waiting == 1 else 's'}: "
                    f"backstay escalations list {flags}"
                ),
                highlight=False,
            )
        if counts[INTERRUPTED]:
            out.print(
                escape(
                    f"  {counts[INTERRUPTED]} interrupted (no process runs them): "
                    f"backstay resume {flags} continues them"
                ),
                highlight=False,
            )
        records, more = view.first(selection, shown_limit)
        what = _what(selection)
        if not records:
            out.print(escape(f"no {what}" if selection.states else f"no {what} match"))
            return
        shown = {r.operation_id: INTERRUPTED for r in records if view.shown_state(r) == INTERRUPTED}
        # The listed tasks' own summary names the model that answered each.
        attempts = tasks.attempts_of([r.operation_id for r in records])
        listed_summary = summarize(records, attempts, ())
        out.print(tasks_table(records, title=what, summary=listed_summary, shown=shown))
        if more:
            out.print(
                escape(f"… and {more} more: --limit N or --all lists them, --json streams them"),
                highlight=False,
            )
    finally:
        close()
