"""What a running batch shows: the engine's ``task.*`` events and its circuits'
``circuit.*`` events, received by a small sink added for the run and removed after it.
On a terminal, a live bar (tasks settled out of all, counts by state) with one line per
event above it; otherwise plain lines, one per event, for logs. Each line of an attempt
names the candidate it runs on (``adapter/model``: a fallback's once the task moved)."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Final, Protocol

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:  # the live bar: imported on a terminal only (``showing_progress``)
    from rich.progress import Progress

from backstay.breaker.events import CircuitClosed, CircuitHalfOpened, CircuitOpened
from backstay.cli._progress_lines import fell_back_text, on, retry_text
from backstay.cli._report import task_label
from backstay.engine.events import (
    TaskCancelled,
    TaskDeferred,
    TaskEscalated,
    TaskFailed,
    TaskFellBack,
    TaskPaused,
    TaskResumed,
    TaskStarted,
    TaskSucceeded,
)
from backstay.engine.states import TaskState
from backstay.events import Event, RetryScheduled, add_sink, remove_sink
from backstay.executors.events import WorkerLost

# States in which a task stopped for this run: done, or waiting for a human or a reset.
SETTLED: Final = frozenset(
    {
        TaskState.SUCCEEDED,
        TaskState.FAILED,
        TaskState.CANCELLED,
        TaskState.PAUSED,
        TaskState.ESCALATED,
    }
)


def _circuit(event: CircuitOpened | CircuitHalfOpened | CircuitClosed) -> str:
    """A line saying what a circuit did."""
    if isinstance(event, CircuitOpened):
        if event.reason == "probe_failed":
            why = "its probe failed"
        elif event.reason == "failure_rate":
            why = f"{event.window_failures} of the last {event.window_calls} calls failed"
        else:
            why = f"{event.consecutive_failures} failures in a row"
        return f"opened ({why}); its tasks wait {event.open_duration_s:g} s"
    if isinstance(event, CircuitHalfOpened):
        return "half-open: a probe goes through"
    return f"closed ({event.reason.replace('_', ' ')})"


def _describe(event: Event, candidate: str | None = None) -> tuple[TaskState | None, str] | None:
    """The state ``event`` leaves its task in (``None``: unchanged), and a line saying
    what happened; ``candidate``: the one the task's last attempt ran on."""
    if isinstance(event, TaskDeferred):
        return None, f"circuit {event.breaker} is open: waiting {event.wait_s:.1f} s (no attempt)"
    if isinstance(event, TaskStarted):
        return TaskState.RUNNING, f"attempt {event.attempt} started{on(candidate)}"
    if isinstance(event, RetryScheduled):
        return TaskState.RETRYING, retry_text(event, candidate)
    if isinstance(event, TaskFellBack):
        text = fell_back_text(event.attempt, event.from_candidate, event.kind, event.to_candidate)
        return None, text
    if isinstance(event, TaskSucceeded):
        cached = " (its result was already recorded)" if event.from_cache else ""
        plural = "" if event.attempts == 1 else "s"
        answered = "" if event.from_cache else on(candidate)
        return (
            TaskState.SUCCEEDED,
            f"succeeded after {event.attempts} attempt{plural}{answered}{cached}",
        )
    if isinstance(event, TaskFailed):
        return TaskState.FAILED, f"failed: {event.reason}"
    if isinstance(event, TaskPaused):
        until = "" if event.resumes_at is None else f" until {event.resumes_at:%Y-%m-%d %H:%M} UTC"
        return TaskState.PAUSED, f"paused{until}: {event.reason}"
    if isinstance(event, TaskEscalated):
        return TaskState.ESCALATED, f"escalation {event.escalation_id} opened: {event.reason}"
    if isinstance(event, TaskCancelled):
        return TaskState.CANCELLED, f"cancelled: {event.reason}"
    if isinstance(event, TaskResumed):
        return TaskState.PENDING, f"taken up again ({event.previous_state}): {event.reason}"
    if isinstance(event, WorkerLost):
        then = "placed again" if event.placed_again else "left for backstay resume"
        return None, f"its worker was lost ({event.error}); {then}"
    return None


class _View(Protocol):
    def show(self, label: str, text: str, states: Mapping[str, TaskState]) -> None: ...


class _Lines:
    """One plain line per event, with the time: for logs and pipes.

    A batch prints a few lines a task, most within the same second: the time is formatted
    once a second (``_clock``). ``typer.echo`` strips ANSI codes from a line going to no
    terminal, asking the stream each time; a line without an escape character has none
    to strip, so it is written without the question (``color=True`` only skips it)."""

    def __init__(self) -> None:
        # The second last formatted and its text, one tuple: a thread reads both at once.
        self._clock: tuple[int, str] = (-1, "")

    def show(self, label: str, text: str, states: Mapping[str, TaskState]) -> None:
        line = f"{self._now()} {label}: {text}"
        typer.echo(line, color=None if "\x1b" in line else True)

    def _now(self) -> str:
        """The local time, ``%H:%M:%S``: the second ``datetime.now()`` would show (which
        rounds to the microsecond, so the last half microsecond of a second is the next)."""
        now = time.time()
        second = int(now)
        if now - second >= _LAST_HALF_MICROSECOND:
            second += 1
        known, text = self._clock
        if second != known:
            text = time.strftime("%H:%M:%S", time.localtime(second))
            self._clock = (second, text)
        return text


# Where ``datetime.now()`` rounds a time up to the next second.
_LAST_HALF_MICROSECOND: Final = 0.9999995


class _Bar:
    """A live bar of the settled tasks, counts by state, and each event's line above it."""

    def __init__(self, progress: Progress, states: Mapping[str, TaskState]) -> None:
        self._progress = progress
        self._task = progress.add_task(_counts(states), total=len(states))
        self._update(states)

    def _update(self, states: Mapping[str, TaskState], *, refresh: bool = True) -> None:
        counts = states.counts() if isinstance(states, _Tally) else _count(states.values())
        settled = sum(n for state, n in counts.items() if state in SETTLED)
        self._progress.update(
            self._task, completed=settled, description=_counts_text(counts), refresh=refresh
        )

    def show(self, label: str, text: str, states: Mapping[str, TaskState]) -> None:
        line = f"{escape(label)}: {escape(text)}"
        live = self._progress.live
        render = getattr(live, "_live_render", None)
        lock = getattr(live, "_lock", None)
        if (
            render is None
            or lock is None
            or getattr(live, "_nested", False)
            or not live.console.is_interactive
            or live.console.is_jupyter
        ):
            self._progress.console.print(line, highlight=False)
            self._update(states)
            return
        # On a terminal, printing a line paints the live bar below it again
        # (``Live.process_renderables``), as it was last refreshed: the line, then a
        # refresh, painted the bar twice, first with the counts before the event. The bar
        # is brought up to date and handed to the live display (what ``Live.refresh``
        # does) before the line is printed: one painting, with the event counted.
        self._update(states, refresh=False)
        with lock:
            render.set_renderable(live.renderable)
            self._progress.console.print(line, highlight=False)


def _counts(states: Mapping[str, TaskState]) -> str:
    return _counts_text(_count(states.values()))


def _count(states: Iterable[TaskState]) -> dict[TaskState, int]:
    counts = dict.fromkeys(TaskState, 0)
    for state in states:
        counts[state] += 1
    return counts


def _counts_text(counts: Mapping[TaskState, int]) -> str:
    return " · ".join(f"{n} {state}" for state, n in counts.items() if n) or "no tasks"


class _Tally(dict[str, TaskState]):
    """The tasks' states, counted by state as the sink sets them (``tally[op] = state``,
    the one change it makes): the bar shows the counts at every event, and counting
    10,000 states anew each time cost a millisecond an event. Events arrive from the
    engine's threads: a change and its counts are made under a lock, and read as a copy
    (``counts()``)."""

    def __init__(self, states: Mapping[str, TaskState]) -> None:
        super().__init__(states)
        self._lock = threading.Lock()
        self._counts = _count(self.values())

    def __setitem__(self, op: str, state: TaskState) -> None:
        with self._lock:
            before = self.get(op)
            super().__setitem__(op, state)
            if before is not None:
                self._counts[before] -= 1
            self._counts[state] += 1

    def counts(self) -> dict[TaskState, int]:
        with self._lock:
            return dict(self._counts)


class ProgressSink:
    """A ``backstay.observe`` sink following the tasks of ``states`` (operation id → the
    state known when the run began); events of other operations are ignored."""

    min_level = logging.INFO

    def __init__(self, states: Mapping[str, TaskState], view: _View) -> None:
        self.states: dict[str, TaskState] = _Tally(states)
        self._view = view
        # The candidate (adapter/model) each task's latest attempt runs on.
        self.candidates: dict[str, str] = {}
        # Each task's label (``task_label``, a parse of its id), made at its first line.
        self._labels: dict[str, str] = {}

    def accepts(self, level: int) -> bool:
        return True

    def emit(self, event: Event) -> None:
        op = event.operation
        if op is None or op not in self.states:
            return
        if isinstance(event, CircuitOpened | CircuitHalfOpened | CircuitClosed):
            self._view.show(f"circuit {event.breaker}", _circuit(event), self.states)
            return
        if isinstance(event, TaskStarted) and event.adapter:
            self.candidates[op] = f"{event.adapter}/{event.model}"
        described = _describe(event, self.candidates.get(op))
        if described is None:
            return
        state, text = described
        # A spent quota pauses the task AND opens an escalation: it stays paused.
        if state is not None and not (
            state is TaskState.ESCALATED and self.states[op] is TaskState.PAUSED
        ):
            self.states[op] = state
        label = self._labels.get(op)
        if label is None:
            label = self._labels[op] = task_label(op)
        self._view.show(label, text, self.states)


@contextlib.contextmanager
def showing_progress(states: Mapping[str, TaskState]) -> Iterator[ProgressSink]:
    """Show the run of the tasks in ``states`` while the block runs."""
    if not sys.stdout.isatty():
        sink = ProgressSink(states, _Lines())
        add_sink(sink)
        try:
            yield sink
        finally:
            remove_sink(sink)
        return
    from rich.progress import (  # noqa: PLC0415 - see the imports
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console()) as progress:
        sink = ProgressSink(states, _Bar(progress, states))
        add_sink(sink)
        try:
            yield sink
        finally:
            remove_sink(sink)
