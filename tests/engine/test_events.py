"""The engine's events: past-tense facts, emitted after the change they report was recorded."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from tests.engine.support import OK, WALL, ScriptedAdapter, engine, spec

from backstay.engine import TaskPaused
from backstay.failure import Failure
from backstay.testing import capture_events

SERVER = Failure(code="ERR_HTTP_500_INTERNAL")


def _names(tmp_path: Path, adapter: ScriptedAdapter) -> list[str]:
    with engine(tmp_path, adapter) as eng, capture_events() as events:
        eng.run_sync([spec(tmp_path)])
    return [n for n in events.names if n.startswith(("task.", "escalation."))]


def test_a_retried_success_reports_start_retry_start_success(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [SERVER, OK]})
    assert _names(tmp_path, adapter) == [
        "task.started",
        "task.retrying",
        "task.started",
        "task.succeeded",
    ]


def test_a_task_that_fails_for_good_reports_task_failed(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_LLM_CONTEXT_LENGTH")]})
    assert _names(tmp_path, adapter)[-1] == "task.failed"


def test_a_content_policy_failure_reports_task_failed_and_task_escalated(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_LLM_CONTENT_FILTER")]})
    assert _names(tmp_path, adapter) == ["task.started", "task.failed", "task.escalated"]


def test_a_quota_reports_task_paused_and_task_escalated(tmp_path: Path) -> None:
    quota = Failure(code="ERR_LLM_DAILY_QUOTA", resets_at=WALL + dt.timedelta(hours=1))
    adapter = ScriptedAdapter({"t1": [quota]})
    assert _names(tmp_path, adapter)[-2:] == ["task.paused", "task.escalated"]


def test_events_carry_the_operation_and_the_task(tmp_path: Path) -> None:
    with engine(tmp_path, ScriptedAdapter()) as eng, capture_events() as events:
        eng.run_sync([spec(tmp_path)])
    (started,) = events.named("task.started")
    data = started.to_dict()
    assert (data["operation"], data["task_id"], data["attempt"]) == ("wf:t1:run_01", "t1", 1)


def test_an_event_with_a_time_is_json_data() -> None:
    event = TaskPaused(
        task_id="t1",
        reason="quota",
        resumes_at=WALL,
        failure=Failure(code="ERR_LLM_DAILY_QUOTA"),
    )
    assert json.loads(json.dumps(event.to_dict()))["resumes_at"] == WALL.isoformat()


def test_a_rate_limited_retry_also_reports_adapter_rate_limited_with_its_wait(
    tmp_path: Path,
) -> None:
    limited = Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=3.0)
    with engine(tmp_path, ScriptedAdapter({"t1": [limited, OK]})) as eng, capture_events() as ev:
        eng.run_sync([spec(tmp_path)])
    (retrying,) = ev.named("task.retrying")
    (waited,) = ev.named("adapter.rate_limited")
    data = waited.to_dict()
    assert data["wait_duration"] == data["wait_s"] == retrying.to_dict()["delay_s"]
    assert data["wait_duration"] >= 3.0
    assert data["operation"] == "wf:t1:run_01"
