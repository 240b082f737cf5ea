"""The event log: every event of the given operations as one redacted JSON line."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from backstay.engine.events import TaskStarted
from backstay.events import BUS
from backstay.failure import Failure
from backstay.observe import EventLog, RetryScheduled, recording
from backstay.redact import register_secret
from backstay.testing import FakeClock


def _started(operation: str) -> TaskStarted:
    return TaskStarted(operation=operation, task_id="t", attempt=1, attempt_id=f"{operation}:a")


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_event_is_one_json_line_with_its_time_first(tmp_path: Path) -> None:
    clock = FakeClock()
    with EventLog(tmp_path / "events.jsonl", clock=clock) as log:
        log.emit(_started("w:t:r"))
    (line,) = _lines(tmp_path / "events.jsonl")
    assert list(line)[:2] == ["at", "event"]
    assert line["at"] == clock.now().isoformat()
    assert line["event"] == "task.started"
    assert line["attempt_id"] == "w:t:r:a"


def test_secrets_in_an_event_are_redacted(tmp_path: Path) -> None:
    canary = "sk-ant-canary-0123456789abcdefghijklmnop"
    register_secret(canary)
    failure = Failure(code="ERR_AUTH_INVALID_KEY", message=f"bad key {canary}")
    with EventLog(tmp_path / "events.jsonl") as log:
        log.emit(RetryScheduled(operation="w:t:r", attempt=1, delay_s=1.0, failure=failure))
    text = (tmp_path / "events.jsonl").read_text(encoding="utf-8")
    assert canary not in text
    assert "ERR_AUTH_INVALID_KEY" in text


def test_recording_keeps_only_the_given_operations_and_leaves_the_bus(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with recording(path, ["w:mine:r"]) as log:
        assert log in BUS.sinks
        BUS.emit(_started("w:mine:r"))
        BUS.emit(_started("w:other:r"))
    assert log not in BUS.sinks
    assert [line["operation"] for line in _lines(path)] == ["w:mine:r"]


def test_the_log_appends_to_what_an_earlier_run_wrote(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    for _ in range(2):
        with EventLog(path) as log:
            log.emit(_started("w:t:r"))
    assert len(_lines(path)) == 2


def test_the_log_takes_info_and_up() -> None:
    assert EventLog.min_level == logging.INFO
