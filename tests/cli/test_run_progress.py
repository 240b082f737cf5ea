"""``backstay run`` prints the readable lines ``batch`` prints (never the JSON log
records of its events), each naming the candidate it runs on; its closing line names the
candidate that answered, a fallback's too. ``batch``'s lines name the candidate of each
attempt. Real mock-agent subprocesses."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from tests.cli.support import DONE, invoke, write_suite

from backstay.cli._progress import ProgressSink
from backstay.cli._state import ALL_SUCCEEDED
from backstay.engine import TaskFellBack, TaskStarted, TaskState, TaskSucceeded
from backstay.failure import Failure

QUICK: Final = "{extends: agent_dispatch, initial_delay_s: 0.05, max_delay_s: 0.05}"
LARGER: Final = "{adapter: mock, model: m2, context_window: 1000000}"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)


def _run(tmp_path: Path, attempts: list[list[dict[str, Any]]], *more: str) -> str:
    (tmp_path / "p.txt").write_text("do it", encoding="utf-8")
    (tmp_path / "ws").mkdir(exist_ok=True)
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump({"attempts": attempts}), encoding="utf-8")
    result = invoke(
        "run",
        "--adapter",
        "mock",
        "--model",
        "m1",
        "--prompt-file",
        "p.txt",
        "--workspace",
        "ws",
        "--output-dir",
        "out",
        "--adapter-option",
        f"scenario={scenario}",
        "--adapter-option",
        f"state_dir={tmp_path / 'mock'}",
        "--policy",
        QUICK,
        *more,
    )
    assert result.exit_code == ALL_SUCCEEDED, result.output
    assert '{"' not in result.output  # no JSON log record
    return result.output


def test_a_retry_is_one_readable_line_naming_the_candidate(tmp_path: Path) -> None:
    output = _run(tmp_path, [[{"error": "overloaded"}], DONE])
    assert "run: attempt 1 failed on mock/m1 (server_error); retrying in 0.1 s" in output
    assert "backstay run: mock/m1 succeeded (exit code 0)" in output


def test_a_fallback_is_named_and_the_closing_line_names_the_model_that_answered(
    tmp_path: Path,
) -> None:
    more = ("--fallback", LARGER, "--context-window", "1000")
    output = _run(tmp_path, [[{"error": "context_overflow"}], DONE], *more)
    assert "run: attempt 1 failed on mock/m1 (context_limit); moving to mock/m2" in output
    assert "backstay run: mock/m2 (fallback of mock/m1) succeeded (exit code 0)" in output


def test_batch_lines_name_the_candidate_of_each_attempt(tmp_path: Path) -> None:
    suite = write_suite(
        tmp_path,
        ["big"],
        scenarios={"big": [[{"error": "context_overflow"}], DONE]},
        task_fields={
            "context_window": 1000,
            "fallbacks": [{"adapter": "mock", "model": "m2", "context_window": 1000000}],
        },
    )
    result = invoke("batch", suite, "--state-dir", "s")
    assert result.exit_code == ALL_SUCCEEDED, result.output
    assert "big/T0-run_01: attempt 1 started on mock/mock-model" in result.output
    moved = "attempt 1 failed on mock/mock-model (context_limit); moving to mock/m2"
    assert f"big/T0-run_01: {moved}" in result.output
    assert "big/T0-run_01: attempt 2 started on mock/m2" in result.output
    assert "big/T0-run_01: succeeded after 2 attempts on mock/m2" in result.output


def test_the_progress_sink_names_the_candidate_and_a_move_to_another() -> None:
    op = "wf:a:T0-run_01"
    view = _Recorder()
    sink = ProgressSink({op: TaskState.PENDING}, view)
    sink.emit(
        TaskStarted(
            operation=op, task_id="a", attempt=1, attempt_id="x", adapter="mock", model="m1"
        )
    )
    failure = Failure(code="ERR_LLM_CONTEXT_LENGTH")
    sink.emit(
        TaskFellBack(
            operation=op,
            task_id="a",
            attempt=1,
            from_candidate="mock/m1",
            to_candidate="mock/m2",
            kind="context_limit",
            failure=failure,
        )
    )
    sink.emit(
        TaskStarted(
            operation=op, task_id="a", attempt=2, attempt_id="y", adapter="mock", model="m2"
        )
    )
    sink.emit(TaskSucceeded(operation=op, task_id="a", attempts=2))
    assert view.lines == [
        "a/T0-run_01: attempt 1 started on mock/m1",
        "a/T0-run_01: attempt 1 failed on mock/m1 (context_limit); moving to mock/m2",
        "a/T0-run_01: attempt 2 started on mock/m2",
        "a/T0-run_01: succeeded after 2 attempts on mock/m2",
    ]


class _Recorder:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def show(self, label: str, text: str, states: object) -> None:
        self.lines.append(f"{label}: {text}")
