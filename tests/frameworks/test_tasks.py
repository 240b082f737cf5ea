"""``adapter: langgraph`` (and the other framework names) as an engine task: through the
real Engine, SQLite state and the fake provider; an approval escalates the task and a
resume continues the framework's run."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from backstay.adapters.registry import get_adapter
from backstay.engine import Engine, ResolveAction, TaskSpec, TaskState
from backstay.errors import ConfigError
from backstay.fakeprovider import FakeProvider, Reply, Scenario, ToolCall
from backstay.policy.retry import RetryPolicy
from backstay.runtime import ApprovalStatus
from backstay.store.sqlite.runs import SQLiteRunStore
from backstay.testing.fakeclock import FakeClock

KEY: Final = "sk-proj-TASKcanary0123456789abcdefABCDEFghijklmnop"
NAMES: Final = ("autogen", "langgraph", "llamaindex", "pydantic-ai")


@pytest.mark.parametrize("name", NAMES)
def test_a_framework_task_escalates_for_approval_and_resume_finishes_it(
    tmp_path: Path, name: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    call = ToolCall(name="write_file", arguments={"path": "notes.txt", "content": "hello"})
    with FakeProvider(Scenario(reply=Reply(tool_call=call, text="Written."))) as fake:
        spec = TaskSpec(
            workflow_id="wf",
            task_id="notes",
            adapter=name,
            model="gpt-5",
            workspace=workspace,
            timeout_s=60,
            prompt="Write the notes.",
            env={"OPENAI_API_KEY": KEY},
            config={
                "options": {"base_url": fake.url + "/v1"},
                "api_key_env": "OPENAI_API_KEY",
                "allowed_tools": ["write_file"],
                "approval_tools": ["write_file"],
            },
            policy=RetryPolicy(name="once", max_attempts=1),
        )
        engine = Engine(
            tmp_path / "state",
            adapters={name: get_adapter(name)},
            clock=FakeClock(),
            env={"OPENAI_API_KEY": KEY},
        )
        with engine:
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
    for file in (tmp_path / "state").rglob("*"):
        if file.is_file():
            assert KEY.encode() not in file.read_bytes(), file


@pytest.mark.parametrize("name", NAMES)
def test_a_framework_task_takes_the_openai_variables_from_the_callers_environment(
    tmp_path: Path, name: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeProvider(Scenario(reply=Reply(text="Done."))) as fake:
        exported = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": fake.url + "/v1"}
        spec = TaskSpec(
            workflow_id="wf",
            task_id="plain",
            adapter=name,
            model="gpt-5",
            workspace=workspace,
            timeout_s=60,
            prompt="Say done.",
            policy=RetryPolicy(name="once", max_attempts=1),
        )
        engine = Engine(
            tmp_path / "state", adapters={name: get_adapter(name)}, clock=FakeClock(), env=exported
        )
        with engine:
            engine.run_sync([spec])
            task = engine.store.task(spec.operation_id)
        served = fake.stats().requests
    assert task is not None
    assert task.state is TaskState.SUCCEEDED, task.reason
    assert served >= 1
    for file in (tmp_path / "state").rglob("*"):
        if file.is_file():
            assert KEY.encode() not in file.read_bytes(), file


@pytest.mark.parametrize("name", ["langgraph", "pydantic-ai", "llamaindex", "autogen"])
def test_a_framework_task_takes_and_checks_the_breaker_and_rate_limit_switches(
    name: str,
) -> None:
    adapter = get_adapter(name)
    adapter.validate_config({"breaker": False, "rate_limit": {"requests_per_minute": 60}})
    with pytest.raises(ConfigError, match=r"config\.breaker"):
        adapter.validate_config({"breaker": "off"})
