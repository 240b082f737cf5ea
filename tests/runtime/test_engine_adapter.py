"""A framework agent as an engine task: through the real Engine, SQLite state and the
fake provider; an approval escalates the task and a resume continues the agent run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from backstay.engine import Engine, ResolveAction, TaskSpec, TaskState
from backstay.errors import ConfigError
from backstay.fakeprovider import FakeProvider, Reply, Scenario, ToolCall
from backstay.policy.retry import RetryPolicy
from backstay.runtime import ApprovalStatus, RunStatus
from backstay.runtime.engine_adapter import RuntimeTaskAdapter, load_factory
from backstay.runtime.store_sqlite import SQLiteRunStore
from backstay.testing.fakeclock import FakeClock

KEY = "sk-ant-api03-ENGINEcanary0123456789abcdefABCDEFghij"
POLICY = RetryPolicy(name="once", max_attempts=1)


def _spec(workspace: Path, url: str, **config: Any) -> TaskSpec:
    return TaskSpec(
        workflow_id="wf",
        task_id="notes",
        adapter="agent-runtime",
        model="claude-sonnet-4-6",
        workspace=workspace,
        timeout_s=60,
        prompt="Write the notes.",
        env={"ANTHROPIC_API_KEY": KEY},
        config={
            "agent": "backstay.runtime.reference:make_agent",
            "options": {"base_url": url},
            "api_key_env": "ANTHROPIC_API_KEY",
            **config,
        },
        policy=POLICY,
    )


def _engine(state_dir: Path) -> Engine:
    return Engine(
        state_dir,
        adapters={"agent-runtime": RuntimeTaskAdapter()},
        clock=FakeClock(),
        env={"ANTHROPIC_API_KEY": KEY},
    )


def test_a_framework_task_succeeds_and_keeps_its_checkpoint(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeProvider(Scenario(reply=Reply(text="All noted."))) as fake:
        spec = _spec(workspace, fake.url)
        with _engine(tmp_path / "state") as engine:
            engine.run_sync([spec])
            task = engine.store.task(spec.operation_id)
    assert task is not None
    assert task.state is TaskState.SUCCEEDED
    with SQLiteRunStore(tmp_path / "state" / "state.sqlite") as store:
        run = store.load_run("default", spec.operation_id)
    assert run is not None
    assert run.status is RunStatus.SUCCEEDED
    assert run.results[0].output == {"answer": "All noted.", "tool_calls": 0}
    for file in (tmp_path / "state").rglob("*"):
        if file.is_file():
            assert KEY.encode() not in file.read_bytes(), file


def test_an_approval_escalates_the_task_and_a_resume_runs_the_approved_call(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    call = ToolCall(name="write_file", arguments={"path": "notes.txt", "content": "hello"})
    with FakeProvider(Scenario(reply=Reply(tool_call=call, text="Written."))) as fake:
        spec = _spec(
            workspace, fake.url, allowed_tools=["write_file"], approval_tools=["write_file"]
        )
        with _engine(tmp_path / "state") as engine:
            engine.run_sync([spec])
            task = engine.store.task(spec.operation_id)
            assert task is not None
            assert task.state is TaskState.ESCALATED
            assert not (workspace / "notes.txt").exists()
            with SQLiteRunStore(tmp_path / "state" / "state.sqlite") as store:
                (approval,) = store.approvals("default")
                store.decide("default", approval.id, ApprovalStatus.APPROVED)
            (escalation,) = engine.escalations.list()
            engine.escalations.resolve(escalation.escalation_id, ResolveAction.RETRY)
            engine.resume_sync()
            task = engine.store.task(spec.operation_id)
    assert task is not None
    assert task.state is TaskState.SUCCEEDED
    assert (workspace / "notes.txt").read_text() == "hello"


def test_the_agent_factory_must_be_importable() -> None:
    with pytest.raises(ConfigError, match="cannot import"):
        load_factory("no_such_module:make")
