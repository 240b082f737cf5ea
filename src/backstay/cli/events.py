"""``backstay events``: the event log of a state directory (``events.jsonl``), one
readable line per event; ``--follow`` keeps printing what a running batch adds."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Final

import typer
from rich.console import Console
from rich.markup import escape

from backstay.cli import _state
from backstay.cli._errors import usage_error
from backstay.cli._operator import select
from backstay.cli._report import task_label
from backstay.engine import TaskState
from backstay.errors import ConfigError
from backstay.events import EVENTS_FILE
from backstay.idempotency.ids import SEPARATOR

# How often --follow looks for new lines.
POLL_S: Final = 0.2
# Fields every line shows in its own columns, never again among the rest.
_SHOWN: Final = frozenset({"at", "event", "operation", "task_id", "policy"})


def _value(key: str, value: Any) -> str:
    if isinstance(value, dict) and "kind" in value and "code" in value:
        return f"{value['kind']}/{value['code']}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def format_event(data: dict[str, Any]) -> str:
    """``"12:00:01.234  task.started  hello/T0-run_01  attempt=1 …"``."""
    at = str(data.get("at", ""))
    clock = at[11:23] if len(at) >= 23 else at
    operation = data.get("operation")
    where = task_label(operation) if isinstance(operation, str) else "-"
    rest = " ".join(
        f"{key}={_value(key, value)}"
        for key, value in data.items()
        if key not in _SHOWN and value is not None
    )
    return f"{clock:<12}  {data.get('event', '?'):<22}  {where:<28}  {rest}".rstrip()


def matches(data: dict[str, Any], task: str | None) -> bool:
    """Whether the event is about ``task``: a task id, a ``task/run`` label or a whole
    operation id (every event when ``task`` is None)."""
    if task is None:
        return True
    operation = data.get("operation")
    if not isinstance(operation, str):
        return False
    parts = operation.split(SEPARATOR)
    return task in (operation, data.get("task_id"), task_label(operation)) or (
        len(parts) == 3 and task == parts[1]
    )


def read_lines(
    path: Path, *, follow: bool, stop: Callable[[], bool], poll_s: float = POLL_S
) -> Iterator[str | None]:
    """Each complete line of ``path`` (``None`` for one that is not UTF-8 text); with
    ``follow``, then each line appended later, until ``stop()`` says so (looked at every
    ``poll_s`` when there is nothing new)."""
    with path.open("rb") as file:
        pending = b""
        while True:
            chunk = file.readline()
            if chunk:
                pending += chunk
                if pending.endswith(b"\n"):
                    try:
                        yield pending.rstrip(b"\n").decode("utf-8")
                    except UnicodeDecodeError:
                        yield None
                    pending = b""
                continue
            if not follow or stop():
                return
            time.sleep(poll_s)


def _never() -> bool:
    return False


def events(
    state_dir: _state.StateDirOption,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing events as they are added.")
    ] = False,
    task: Annotated[
        str | None,
        typer.Option("--task", help="Only this task's events (a task id, task/run or id)."),
    ] = None,
    as_json: _state.JsonOption = False,
    store: _state.StoreOption = None,
    sets: _state.SetOption = None,
) -> None:
    """The events of the batch in --state-dir (events.jsonl), one line each, oldest first.

    Every batch and resume appends its events there, redacted (with a Redis store, each
    machine's state directory keeps the events of the runs it made). With --follow, new
    events are printed as the batch records them (Ctrl-C stops). Exit code 0, or 2 when
    the directory holds no event log or --task names no task of the batch.
    """
    path = state_dir / EVENTS_FILE
    if not path.is_file():
        what = "does not exist" if not state_dir.exists() else f"holds no {EVENTS_FILE}"
        raise usage_error(
            ConfigError(f"{state_dir} {what}: no batch ran there", where="--state-dir")
        )
    if task is not None or store is not None:
        _check_task(state_dir, task, store, sets)
    skipped = 0
    try:
        for line in read_lines(path, follow=follow, stop=_never):
            if line is None:
                skipped += 1  # damaged: the log stays readable past it
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a crash
            if isinstance(data, dict) and matches(data, task):
                sys.stdout.write((json.dumps(data) if as_json else format_event(data)) + "\n")
                sys.stdout.flush()
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
    finally:
        if skipped:
            _warn(f"warning: skipped {skipped} line(s) of {path} that are not UTF-8 text")


def _check_task(
    state_dir: Path, task: str | None, store: str | None, sets: list[str] | None
) -> None:
    """A usage error when the batch cannot be opened, or ``task`` names none of its tasks."""
    try:
        location = _state.store_location(store, state_dir, sets=sets)
        with _state.open_engine(state_dir, location=location) as engine:
            records = engine.store.tasks()
        if task is not None:
            select(records, [task], None, movable=frozenset(TaskState), verb="show")
    except ConfigError as err:
        where = "--task" if err.where == "TASK" else err.where
        raise usage_error(ConfigError(err.reason, where=where)) from None


def _warn(message: str) -> None:
    Console(stderr=True, soft_wrap=True).print(escape(message), highlight=False)
