"""What ``backstay retry`` and ``backstay cancel`` share: naming the tasks to move (TASK…
and ``--state``), reading a suite's current specs, and printing each move."""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from backstay.cli._report import task_label
from backstay.engine.states import TaskState
from backstay.errors import ConfigError
from backstay.idempotency.ids import SEPARATOR

if TYPE_CHECKING:  # the configuration and the suite's batch: imported when a suite is read
    from backstay.engine import SuiteBatch, TaskRecord

TasksArgument = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="TASK...",
        help="The tasks: a task id (every run of it), task/run as status shows it, a whole "
        "operation id, or a glob of those (quote it: 'fix-*').",
        show_default=False,
    ),
]


def _names(record: TaskRecord) -> tuple[str, ...]:
    parts = record.operation_id.split(SEPARATOR)
    task = parts[1] if len(parts) == 3 else record.task_id
    return (record.operation_id, task, task_label(record.operation_id))


def _matches(record: TaskRecord, name: str) -> bool:
    return any(fnmatch.fnmatchcase(candidate, name) for candidate in _names(record))


def select(
    records: Sequence[TaskRecord],
    names: Sequence[str] | None,
    state: str | None,
    *,
    movable: Collection[TaskState],
    verb: str,
) -> list[TaskRecord]:
    """The tasks TASK… and ``--state`` name, in the batch's order. A name matching no
    task, a state this command does not move, a named task in a state it does not move,
    or neither given: a ``ConfigError`` (nothing is moved)."""
    choices = ", ".join(sorted(movable))
    wanted: TaskState | None = None
    if state is not None:
        try:
            wanted = TaskState(state)
        except ValueError:
            wanted = None
        if wanted not in movable:
            raise ConfigError(f"must be one of {choices}, got {state!r}", where="--state")
    if not names and wanted is None:
        raise ConfigError(f"name the tasks to {verb} (TASK...), or give --state", where=verb)
    chosen = [r for r in records if wanted is None or r.state is wanted]
    if names:
        for name in names:
            if not any(_matches(r, name) for r in records):
                known = ", ".join(sorted({r.task_id for r in records})[:10]) or "none"
                raise ConfigError(
                    f"no task of the batch is {name!r} (its task ids: {known})", where="TASK"
                )
        chosen = [r for r in chosen if any(_matches(r, name) for name in names)]
        stuck = [r for r in chosen if r.state not in movable]
        if stuck:
            listed = ", ".join(f"{task_label(r.operation_id)} is {r.state}" for r in stuck[:5])
            raise ConfigError(
                f"{verb} moves only {choices} tasks, but {listed}; nothing was changed",
                where="TASK",
            )
    return chosen


def suite_batch(file: Path, state_dir: Path, config_file: Path | None) -> SuiteBatch:
    """The batch ``file`` (a suite) makes in ``state_dir``: its current specs, with the
    operation ids of the batch kept there (``ConfigError`` for another suite's)."""
    from backstay.config import load_config, load_suite, with_frameworks  # noqa: PLC0415
    from backstay.engine.suite_batch import SuiteBatch  # noqa: PLC0415

    config = load_config(config_file)
    suite = with_frameworks(load_suite(file, registry=config.registry), config.frameworks)
    return SuiteBatch.open(suite, state_dir)


def say_moved(record: TaskRecord, previous: TaskState, more: str = "") -> None:
    typer.echo(f"{task_label(record.operation_id)}: {previous} -> {record.state}{more}")
