"""``backstay retry``: re-open failed or cancelled tasks of a batch, to run at the next
``backstay resume`` — with the spec the batch recorded, or (``--suite FILE``) the suite
file's current one. Each task's move is printed and recorded (``task.reopened``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from backstay.cli import _operator, _state
from backstay.cli._errors import usage_error
from backstay.cli._report import task_label
from backstay.cli.batch import CONFIG_HELP
from backstay.engine import REOPENABLE, InvalidTransition, TaskRecord, TaskSpec, suite_diff
from backstay.errors import ConfigError
from backstay.events import EVENTS_FILE, recording


def retry(
    state_dir: _state.StateDirOption,
    tasks: _operator.TasksArgument = None,
    state: Annotated[
        str | None,
        typer.Option(
            "--state",
            metavar="STATE",
            help="Every task in this state: failed or cancelled.",
            show_default=False,
        ),
    ] = None,
    suite: Annotated[
        Path | None,
        typer.Option(
            "--suite",
            metavar="FILE",
            help="Run them with this suite file's current specs (prompt, model, "
            "timeouts...) instead of those the batch recorded.",
            show_default=False,
        ),
    ] = None,
    config_file: Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP)] = None,
    store: _state.StoreOption = None,
    sets: _state.SetOption = None,
) -> None:
    """Re-open failed or cancelled tasks of the batch in --state-dir: the next backstay
    resume runs them.

    Each runs with a new retry budget, its attempts numbered on from the last. Without
    --suite it runs the spec the batch recorded; with --suite FILE, that file's current
    spec of the task (the fields that change are shown). Succeeded tasks are never run
    again. Exit code 0, or 2 when a task is unknown or not failed or cancelled (nothing
    is changed then).
    """
    try:
        location = _state.store_location(store, state_dir, sets=sets)
        engine = _state.open_engine(state_dir, location=location)
    except ConfigError as err:
        raise usage_error(err) from None
    with engine:
        try:
            records = engine.store.tasks()
            chosen = _operator.select(records, tasks, state, movable=REOPENABLE, verb="retry")
            specs, changes = _suite_specs(suite, state_dir, config_file, chosen)
            ops = [record.operation_id for record in chosen]
            with recording(state_dir / EVENTS_FILE, ops):
                for record in chosen:
                    moved = engine.controls.retry(record, spec=specs.get(record.operation_id))
                    _operator.say_moved(moved.record, moved.previous, _spec_note(
                        record.operation_id, suite, changes))  # fmt: skip
        except ConfigError as err:
            raise usage_error(err) from None
        except InvalidTransition as err:  # moved by someone else since it was read
            raise usage_error(
                ConfigError(f"a task changed meanwhile: {err}; run it again", where="retry")
            ) from None
    if not chosen:
        typer.echo(f"no {state} task to retry")
        return
    flags = _state.batch_flags(state_dir, location)
    typer.echo(f"backstay resume {flags} runs {'it' if len(chosen) == 1 else 'them'}")


def _suite_specs(
    suite: Path | None, state_dir: Path, config_file: Path | None, chosen: list[TaskRecord]
) -> tuple[dict[str, TaskSpec], dict[str, tuple[str, ...]]]:
    """The suite's current spec of each chosen task (none without ``suite``: the stored
    ones run) and the fields that differ from the stored one; a task the suite no longer
    has is a ``ConfigError``."""
    if suite is None:
        return {}, {}
    batch = _operator.suite_batch(suite, state_dir, config_file)
    runs = {run.spec.operation_id: run for run in batch.runs}
    missing = [r for r in chosen if r.operation_id not in runs]
    if missing:
        raise ConfigError(
            f"has no run {task_label(missing[0].operation_id)} any more: retry it without "
            "--suite to run its recorded spec",
            where=str(suite),
        )
    specs = {}
    for record in chosen:
        run = runs[record.operation_id]
        run.prepare()  # its workspace, when the suite gives a new template or none was made
        specs[record.operation_id] = run.spec
    diff = suite_diff(chosen, list(specs.values()))
    return specs, {change.operation_id: change.fields for change in diff.changed}


def _spec_note(op: str, suite: Path | None, changes: dict[str, tuple[str, ...]]) -> str:
    if suite is None:
        return " (spec: as recorded)"
    fields = changes.get(op)
    changed = f"{', '.join(fields)} changed" if fields else "unchanged"
    return f" (spec: {suite}, {changed})"
