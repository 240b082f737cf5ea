"""``backstay events``: the event log of a batch, readable, filtered, followed."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Final

from tests.cli.support import four_outcome_batch, invoke

from backstay.cli.events import format_event, matches
from backstay.observe import EVENTS_FILE

BACKSTAY: Final = [sys.executable, "-c", "from backstay.cli import main; main()"]
FOLLOW_LIMIT_S: Final = 30.0


def test_a_batch_writes_every_event_of_its_tasks_to_the_event_log(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    lines = (state / EVENTS_FILE).read_text(encoding="utf-8").splitlines()
    names = [json.loads(line)["event"] for line in lines]
    assert names.count("task.started") == 4
    assert {"task.succeeded", "task.failed", "task.paused", "task.escalated"} <= set(names)


def test_a_resume_appends_to_the_same_log(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    before = len((state / EVENTS_FILE).read_text(encoding="utf-8").splitlines())
    invoke("escalations", "resolve", "1", "--action", "retry", "--state-dir", state)
    invoke("resume", "--state-dir", state)
    after = (state / EVENTS_FILE).read_text(encoding="utf-8").splitlines()
    added = [json.loads(line)["event"] for line in after[before:]]
    assert "task.started" in added


def test_events_prints_one_readable_line_per_event(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    result = invoke("events", "--state-dir", state)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == len((state / EVENTS_FILE).read_text(encoding="utf-8").splitlines())
    assert any("task.failed" in line and "overflow/T0-run_01" in line for line in lines)
    assert any("context_limit/ERR_LLM_CONTEXT_LENGTH" in line for line in lines)


def test_events_of_one_task_only(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    result = invoke("events", "--state-dir", state, "--task", "blocked", "--json")
    assert result.exit_code == 0, result.output
    ops = {json.loads(line)["operation"] for line in result.stdout.splitlines()}
    assert len(ops) == 1
    assert ":blocked:" in ops.pop()


def test_a_directory_without_an_event_log_exits_2(tmp_path: Path) -> None:
    result = invoke("events", "--state-dir", tmp_path / "nowhere")
    assert result.exit_code == 2
    assert "no batch ran there" in result.output
    assert "Traceback" not in result.output


def test_follow_prints_events_appended_after_it_started(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    log = state / EVENTS_FILE
    log.write_text(json.dumps({"at": "x", "event": "task.started", "operation": "w:a:r"}) + "\n")
    proc = subprocess.Popen(
        [*BACKSTAY, "events", "--state-dir", str(state), "--follow"],
        stdout=subprocess.PIPE,
        text=True,
    )
    # A bound on the whole test: killing the process ends any read that still waits.
    watchdog = threading.Timer(FOLLOW_LIMIT_S, proc.kill)
    watchdog.start()
    try:
        assert proc.stdout is not None
        assert "task.started" in proc.stdout.readline()
        with log.open("a", encoding="utf-8") as file:
            file.write(json.dumps({"at": "y", "event": "task.succeeded", "operation": "w:a:r"}))
            file.write("\n")
        assert "task.succeeded" in proc.stdout.readline()
        assert proc.poll() is None  # still following
    finally:
        watchdog.cancel()
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_format_shows_time_event_task_and_the_other_fields() -> None:
    line = format_event(
        {
            "at": "2026-01-01T12:00:01.234567+00:00",
            "event": "task.retrying",
            "operation": "w:t:T0-run_01",
            "delay_s": 1.5,
            "failure": {"kind": "rate_limit", "code": "ERR_RATE_LIMITED"},
        }
    )
    assert line.startswith("12:00:01.234")
    assert "t/T0-run_01" in line
    assert "delay_s=1.5" in line
    assert "failure=rate_limit/ERR_RATE_LIMITED" in line


def test_match_by_task_id_label_or_operation() -> None:
    data = {"operation": "w:t:T0-run_01"}
    assert matches(data, "t")
    assert matches(data, "t/T0-run_01")
    assert matches(data, "w:t:T0-run_01")
    assert not matches(data, "u")
