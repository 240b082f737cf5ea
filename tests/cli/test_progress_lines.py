"""The plain progress lines (output to no terminal): the local time as ``datetime.now()``
shows it, each task's label as ``task_label`` makes it, ANSI codes stripped as
``typer.echo`` strips them, and the live bar's last frame holding every event's counts."""

from __future__ import annotations

import datetime as dt
import io
import sys
import threading
import time

import pytest
import typer

from backstay.cli import _progress
from backstay.cli._progress import ProgressSink, _Bar, _Lines, showing_progress
from backstay.cli._report import task_label
from backstay.engine import TaskStarted, TaskState, TaskSucceeded
from backstay.events import BUS

OPS = ["wf:a:T0-run_01", "wf:b:T1-run_02", "not-a-batch-id", "wf:c:T0-run_01"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    "now",
    [
        1_764_384_385.0,
        1_764_384_385.25,
        1_764_384_385.9999994,
        1_764_384_385.9999996,
        1_764_384_386.0000001,
        1_700_000_000.5,
    ],
)
def test_the_time_is_the_second_datetime_now_shows(
    monkeypatch: pytest.MonkeyPatch, now: float
) -> None:
    expected = f"{dt.datetime.fromtimestamp(now).astimezone():%H:%M:%S}"
    monkeypatch.setattr(time, "time", lambda: now)
    lines = _Lines()
    assert lines._now() == expected
    assert lines._now() == expected  # the second kept


def test_the_time_moves_on_with_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _Lines()
    for now in (1_764_384_385.5, 1_764_384_386.5, 1_764_384_385.5, 1_764_388_000.0):
        monkeypatch.setattr(time, "time", lambda now=now: now)
        assert lines._now() == f"{dt.datetime.fromtimestamp(now).astimezone():%H:%M:%S}"


@pytest.mark.parametrize(
    "text",
    ["attempt 1 started on a/m", "failed: \x1b[31mred\x1b[0m text", "odd \x1b escape", ""],
)
def test_a_line_is_what_typer_echo_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_764_384_385.5)
    _Lines().show("a/T0-run_01", text, {})
    shown = capsys.readouterr().out
    typer.echo(
        f"{dt.datetime.fromtimestamp(1_764_384_385.5).astimezone():%H:%M:%S} a/T0-run_01: {text}"
    )
    assert shown == capsys.readouterr().out
    assert "\x1b[31m" not in shown


def test_a_terminal_keeps_its_colours(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    _Lines().show("a/T0-run_01", "failed: \x1b[31mred\x1b[0m", {})
    assert "\x1b[31mred" in terminal.getvalue()


class _Recorder:
    def __init__(self) -> None:
        self.labels: list[str] = []

    def show(self, label: str, text: str, states: object) -> None:
        self.labels.append(label)


def test_each_label_is_the_task_label_of_its_operation() -> None:
    view = _Recorder()
    sink = ProgressSink(dict.fromkeys(OPS, TaskState.PENDING), view)
    for op in OPS * 3:
        sink.emit(TaskStarted(operation=op, task_id="t", attempt=1, attempt_id=f"{op}:1"))
    assert view.labels == [task_label(op) for op in OPS * 3]


@pytest.mark.parametrize("term", ["xterm-256color", "dumb"])
def test_the_bar_shows_the_counts_after_each_event(
    monkeypatch: pytest.MonkeyPatch, term: str
) -> None:
    """On a terminal the frame painted under each line counts its event; a dumb terminal
    gets the lines, and the bar once, at the end."""
    monkeypatch.setenv("TERM", term)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    states = dict.fromkeys(OPS, TaskState.PENDING)
    with showing_progress(states) as sink:
        for n, op in enumerate(OPS, start=1):
            BUS.emit(TaskStarted(operation=op, task_id="t", attempt=1, attempt_id=f"{op}:1"))
            BUS.emit(TaskSucceeded(operation=op, task_id="t", attempts=1))
            shown = terminal.getvalue()
            assert f"{task_label(op)}: attempt 1 started\n" in shown
            if term != "dumb":
                # The frame painted with the event's line already counts the event.
                frame = shown[shown.rindex(f"{task_label(op)}: succeeded") :]
                assert f"{n} succeeded" in frame
                assert f"{n}/{len(OPS)}" in frame
        assert isinstance(sink._view, _Bar)
    assert f"{len(OPS)} succeeded" in terminal.getvalue().rsplit("succeeded after", 1)[1]


def test_the_counts_stay_right_when_threads_set_states_at_once() -> None:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can
    try:
        _threads_set_states()
    finally:
        sys.setswitchinterval(before)


def _threads_set_states() -> None:
    ops = [f"wf:t{i}:T0-run_01" for i in range(2000)]
    view = _Recorder()
    sink = ProgressSink(dict.fromkeys(ops, TaskState.PENDING), view)
    order = [TaskState.RUNNING, TaskState.RETRYING, TaskState.RUNNING, TaskState.SUCCEEDED]

    def drive(part: list[str]) -> None:
        for state in order:
            for op in part:
                sink.states[op] = state

    threads = [threading.Thread(target=drive, args=(ops[i::8],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counts = sink.states.counts()  # type: ignore[attr-defined]
    assert counts == _progress._count(sink.states.values())
    assert counts[TaskState.SUCCEEDED] == len(ops)
