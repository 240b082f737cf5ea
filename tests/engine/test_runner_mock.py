"""Engine with MockAdapter: every attempt a real agent subprocess, failing as Claude Code
fails, on a fake clock (waits are recorded, not slept)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from tests.engine.support import WALL, clock, engine, spec

from backstay.adapters.mock import MockAdapter
from backstay.engine import Engine, Summary, TaskState
from backstay.errors import ConfigError
from backstay.testing import FakeClock

OP = "wf:t1:run_01"
S = TaskState
SUCCESS: list[dict[str, Any]] = [
    {"write_file": "out/answer.txt", "text": "42"},
    {"result": "done", "input_tokens": 120, "output_tokens": 40, "cost_usd": 0.002},
]


def _run(tmp_path: Path, attempts: list[list[dict[str, Any]]], fake: FakeClock) -> Summary:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    # The mock counts attempts in files, so a new engine (a resume) continues the script.
    config = {"scenario": {"attempts": attempts}, "state_dir": str(tmp_path / "mock")}
    task = spec(workspace, adapter="mock", config=config)
    with engine(tmp_path / "state", MockAdapter(), fake=fake) as eng:
        return eng.run_sync([task])


def _resume(tmp_path: Path, fake: FakeClock) -> Summary:
    with Engine(tmp_path / "state", adapters={"mock": MockAdapter}, clock=fake, env={}) as eng:
        return eng.resume_sync()


def test_an_agent_that_succeeds_leaves_its_result_usage_and_logs(tmp_path: Path) -> None:
    summary = _run(tmp_path, [SUCCESS], clock())
    attempt_dir = tmp_path / "state" / "runs" / "t1" / "default" / "run_01" / "attempt_1"
    assert summary.count(S.SUCCEEDED) == 1
    assert (summary.usage.input_tokens, summary.usage.cost_usd) == (120, 0.002)
    assert (tmp_path / "ws" / "out" / "answer.txt").read_text() == "42"
    assert "mock: attempt 1" in (attempt_dir / "agent.log").read_text()


def test_a_rate_limited_agent_waits_then_succeeds(tmp_path: Path) -> None:
    fake = clock()
    summary = _run(tmp_path, [[{"error": "rate_limit", "retry_after_s": 5}], SUCCESS], fake)
    assert (summary.count(S.SUCCEEDED), summary.attempts) == (1, 2)
    assert summary.failures_by_kind == {"rate_limit": 1}
    assert fake.sleeps == [pytest.approx(5.05)]
    assert summary.waited_s == pytest.approx(5.05)


def test_an_agent_over_its_context_fails_without_a_retry(tmp_path: Path) -> None:
    summary = _run(tmp_path, [[{"error": "context_overflow"}], SUCCESS], clock())
    (report,) = summary.tasks
    assert (report.state, report.reason, report.attempts) == (
        S.FAILED,
        "context_limit exceeded",
        1,
    )


def test_an_agent_blocked_by_content_policy_fails_with_an_escalation(tmp_path: Path) -> None:
    summary = _run(tmp_path, [[{"error": "content_filter"}], SUCCESS], clock())
    assert (summary.count(S.FAILED), summary.open_escalations, summary.attempts) == (1, 1, 1)


def test_an_agent_failing_unrecognisably_is_retried_once(tmp_path: Path) -> None:
    summary = _run(tmp_path, [[{"stderr": "Segmentation fault"}, {"exit": 139}]], clock())
    assert (summary.count(S.FAILED), summary.attempts) == (1, 2)
    assert summary.failures_by_kind == {"unknown": 2}


def test_an_agent_out_of_quota_pauses_then_resumes_after_the_reset(tmp_path: Path) -> None:
    fake = clock()
    resets = WALL + dt.timedelta(hours=5)
    quota = [{"error": "quota", "resets_at": resets.isoformat()}]
    paused = _run(tmp_path, [quota, SUCCESS], fake)
    early = _resume(tmp_path, fake)
    fake.advance(dt.timedelta(hours=5, seconds=1).total_seconds())
    resumed = _resume(tmp_path, fake)
    assert (paused.count(S.PAUSED), paused.next_resume_at) == (1, resets)
    assert (early.count(S.PAUSED), early.attempts) == (1, 1)
    assert (resumed.count(S.SUCCEEDED), resumed.attempts, resumed.open_escalations) == (1, 2, 0)


def test_a_task_whose_config_holds_api_keys_is_refused_before_anything_is_recorded(
    tmp_path: Path,
) -> None:
    # The evaluation harness interface's merged-config keys are run()'s; a task's config
    # holds settings only, so a key is never recorded with the task.
    canary = "canary-task-key-5e1d0c7b93a2"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = {"scenario": {"attempts": [SUCCESS]}, "api_keys": {"ANTHROPIC_API_KEY": canary}}
    task = spec(workspace, adapter="mock", config=config)
    with engine(tmp_path / "state", MockAdapter(), fake=clock()) as eng:
        with pytest.raises(ConfigError, match=r"config\.api_keys: .*its environment") as raised:
            eng.run_sync([task])
        assert eng.store.tasks() == ()
    assert canary not in str(raised.value)
    for path in (tmp_path / "state").rglob("*"):
        if path.is_file():
            assert canary.encode() not in path.read_bytes(), path
