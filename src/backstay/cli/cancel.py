"""``backstay cancel``: cancel tasks of a batch that have not finished. A task running in
another process has its attempt stopped through its lease; each move is printed and
recorded (``task.cancelled``)."""

from __future__ import annotations

from typing import Annotated, Final

import typer

from backstay.cli import _operator, _state
from backstay.cli._errors import usage_error
from backstay.engine import TERMINAL, InvalidTransition, TaskState
from backstay.errors import ConfigError
from backstay.events import EVENTS_FILE, recording

CANCELLABLE: Final = frozenset(TaskState) - TERMINAL


def cancel(
    state_dir: _state.StateDirOption,
    tasks: _operator.TasksArgument = None,
    state: Annotated[
        str | None,
        typer.Option(
            "--state",
            metavar="STATE",
            help="Every task in this state: pending, retrying, paused, escalated or running.",
            show_default=False,
        ),
    ] = None,
    note: Annotated[
        str, typer.Option("--note", "--reason", help="Why; kept with each task's reason.")
    ] = "",
    store: _state.StoreOption = None,
    sets: _state.SetOption = None,
) -> None:
    """Cancel tasks of the batch in --state-dir that have not finished: they never run.

    A running task's attempt is stopped by the runner that holds it, at its next lease
    renewal (a third of that runner's --lease-ttl); the attempt is recorded as
    interrupted. Open escalations of the tasks are closed (skip). backstay retry re-opens
    a cancelled task. Exit code 0, or 2 when a task is unknown or already finished
    (nothing is changed then).
    """
    try:
        location = _state.store_location(store, state_dir, sets=sets)
        engine = _state.open_engine(state_dir, location=location)
    except ConfigError as err:
        raise usage_error(err) from None
    with engine:
        try:
            chosen = _operator.select(
                engine.store.tasks(), tasks, state, movable=CANCELLABLE, verb="cancel"
            )
            ops = [record.operation_id for record in chosen]
            with recording(state_dir / EVENTS_FILE, ops):
                for record in chosen:
                    moved = engine.controls.cancel(record, note=note)
                    stopped = (
                        "; its runner stops the attempt at its next lease renewal"
                        if moved.previous is TaskState.RUNNING
                        else ""
                    )
                    _operator.say_moved(moved.record, moved.previous, stopped)
        except ConfigError as err:
            raise usage_error(err) from None
        except InvalidTransition as err:  # finished since it was read
            raise usage_error(
                ConfigError(f"a task changed meanwhile: {err}; run it again", where="cancel")
            ) from None
    if not chosen:
        typer.echo(f"no {state} task to cancel")
