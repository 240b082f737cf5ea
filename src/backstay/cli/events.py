"""``backstay events``: the event log of a state directory (``events.jsonl``), one
readable line per event; ``--follow`` keeps printing what a running batch adds."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer
from rich.console import Console
from rich.markup import escape

from backstay.cli import _state
from backstay.cli._errors import usage_error
from backstay.cli._operator import select
from backstay.cli._report import task_label
from backstay.engine.states import TERMINAL, TaskState
from backstay.errors import ConfigError
from backstay.events import EVENTS_FILE
from backstay.idempotency.ids import SEPARATOR
from backstay.idempotency.owners import holder_is_dead

if TYPE_CHECKING:  # the engine's runner: imported when the events are followed
    from backstay.engine import Engine

# How often --follow looks for new lines.
POLL_S: Final = 0.2
# How often --follow looks whether the batch still runs (twice idle in a row: it ended).
QUIET_S: Final = 1.0
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


class BatchEnded:
    """``--follow``'s stop: true once the batch's runners are gone — no task of it holds a
    live lease (its runner's; a runner of this host that died holds none) at two looks
    ``QUIET_S`` apart, so the gap between one task and the next never ends it. A finished
    or stopped batch ends the follow at once; a killed runner on another machine, when
    its leases lapse."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._quiet = 0
        self._looked = 0.0

    def _busy(self) -> bool:
        ops = self._engine.operations
        for record in self._engine.store.tasks():
            if record.state in TERMINAL:
                continue
            owner = ops.holder(record.operation_id)
            if owner is not None and not holder_is_dead(owner):
                return True
        return False

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self._looked < QUIET_S:
            return False
        self._looked = now
        self._quiet = 0 if self._busy() else self._quiet + 1
        return self._quiet >= 2  # two looks in a row


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
    events are printed as the batch records them, until the batch ends (no runner holds
    any of its tasks any more) or Ctrl-C. Exit code 0, or 2 when the directory holds no
    event log or --task names no task of the batch.
    """
    path = state_dir / EVENTS_FILE
    if not path.is_file():
        what = "does not exist" if not state_dir.exists() else f"holds no {EVENTS_FILE}"
        raise usage_error(
            ConfigError(f"{state_dir} {what}: no batch ran there", where="--state-dir")
        )
    engine = _open(state_dir, task, store, sets) if task or store else None
    if engine is None and follow:
        engine = _try_open(state_dir, sets)  # none: follow until Ctrl-C
    skipped = 0
    stop = _never if engine is None else BatchEnded(engine)
    try:
        for line in read_lines(path, follow=follow, stop=stop):
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
        if engine is not None:
            engine.close()
        if skipped:
            _warn(f"warning: skipped {skipped} line(s) of {path} that are not UTF-8 text")


def _try_open(state_dir: Path, sets: list[str] | None) -> Engine | None:
    """The batch of ``state_dir`` if it can be opened, for --follow to see it end."""
    try:
        location = _state.store_location(None, state_dir, sets=sets)
        return _state.open_engine(state_dir, location=location)
    except ConfigError:
        return None


def _open(state_dir: Path, task: str | None, store: str | None, sets: list[str] | None) -> Engine:
    """The batch (for --follow to see when it ends); a usage error when it cannot be
    opened, or ``task`` names none of its tasks."""
    engine = None
    try:
        location = _state.store_location(store, state_dir, sets=sets)
        engine = _state.open_engine(state_dir, location=location)
        if task is not None:
            select(engine.store.tasks(), [task], None, movable=frozenset(TaskState), verb="show")
    except ConfigError as err:
        if engine is not None:
            engine.close()
        where = "--task" if err.where == "TASK" else err.where
        raise usage_error(ConfigError(err.reason, where=where)) from None
    return engine


def _warn(message: str) -> None:
    Console(stderr=True, soft_wrap=True).print(escape(message), highlight=False)
