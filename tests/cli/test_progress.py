"""What a running batch shows: a sink on the engine's task events, a live bar on a
terminal and plain lines otherwise, removed when the run ends."""

from __future__ import annotations

import datetime as dt
import io
import sys

import pytest

from backstay.breaker import CircuitClosed, CircuitOpened, CircuitState
from backstay.cli._progress import ProgressSink, showing_progress
from backstay.engine import (
    TaskDeferred,
    TaskEscalated,
    TaskPaused,
    TaskStarted,
    TaskState,
    TaskSucceeded,
)
from backstay.events import BUS
from backstay.failure import Failure

A = "wf:a:T0-run_01"
B = "wf:b:T0-run_01"
QUOTA = Failure(code="ERR_LLM_DAILY_QUOTA")


class _Recorder:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def show(self, label: str, text: str, states: object) -> None:
        self.lines.append(f"{label}: {text}")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _started(op: str) -> TaskStarted:
    return TaskStarted(operation=op, task_id="a", attempt=1, attempt_id=f"{op}:attempt_1")


def test_the_sink_follows_its_tasks_and_ignores_other_operations() -> None:
    view = _Recorder()
    sink = ProgressSink({A: TaskState.PENDING}, view)
    sink.emit(_started(A))
    sink.emit(_started("wf:other:T0-run_01"))
    sink.emit(TaskSucceeded(operation=A, task_id="a", attempts=1))
    assert sink.states == {A: TaskState.SUCCEEDED}
    assert view.lines == [
        "a/T0-run_01: attempt 1 started",
        "a/T0-run_01: succeeded after 1 attempt",
    ]


def test_circuits_and_waits_for_them_are_shown_without_moving_the_task() -> None:
    view = _Recorder()
    sink = ProgressSink({A: TaskState.RETRYING}, view)
    at = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    sink.emit(
        CircuitOpened(
            operation=A,
            breaker="anthropic-api/m",
            at=at,
            from_state=CircuitState.CLOSED,
            reason="consecutive_failures",
            consecutive_failures=3,
            open_duration_s=4.0,
        )
    )
    sink.emit(
        TaskDeferred(operation=A, task_id="a", attempt=3, breaker="anthropic-api/m", wait_s=4)
    )
    sink.emit(
        CircuitClosed(
            operation=A,
            breaker="anthropic-api/m",
            at=at,
            from_state=CircuitState.HALF_OPEN,
            reason="probes_succeeded",
        )
    )
    assert sink.states == {A: TaskState.RETRYING}
    assert view.lines == [
        "circuit anthropic-api/m: opened (3 failures in a row); its tasks wait 4 s",
        "a/T0-run_01: circuit anthropic-api/m is open: waiting 4.0 s (no attempt)",
        "circuit anthropic-api/m: closed (probes succeeded)",
    ]


def test_a_spent_quota_stays_paused_when_its_escalation_opens() -> None:
    sink = ProgressSink({A: TaskState.RUNNING}, _Recorder())
    resets = dt.datetime(2099, 1, 1, tzinfo=dt.UTC)
    sink.emit(
        TaskPaused(operation=A, task_id="a", reason="quota", resumes_at=resets, failure=QUOTA)
    )
    sink.emit(TaskEscalated(operation=A, task_id="a", escalation_id=1, reason="q", failure=QUOTA))
    assert sink.states == {A: TaskState.PAUSED}


def test_piped_output_gets_plain_lines_and_the_sink_is_removed_after(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with showing_progress({A: TaskState.PENDING}) as sink:
        assert sink in BUS.sinks
        BUS.emit(_started(A))
    assert sink not in BUS.sinks
    assert capsys.readouterr().out.endswith(" a/T0-run_01: attempt 1 started\n")


def test_a_terminal_gets_a_live_bar_of_the_settled_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    with showing_progress({A: TaskState.PENDING, B: TaskState.SUCCEEDED}):
        BUS.emit(_started(A))
        BUS.emit(TaskSucceeded(operation=A, task_id="a", attempts=1))
    shown = terminal.getvalue()
    assert "a/T0-run_01: succeeded after 1 attempt" in shown
    assert "2 succeeded" in shown
    assert "2/2" in shown
