"""A framework agent as an engine task: through the real Engine, SQLite state and the
fake provider; an approval escalates the task and a resume continues the agent run."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from tests.runtime.agent_tasks import reference_agent_task

from backstay.engine import Engine, ResolveAction, TaskSpec, TaskState
from backstay.errors import ConfigError
from backstay.fakeprovider import (
    FakeProvider,
    Fault,
    FaultKind,
    Reply,
    Scenario,
    ToolCall,
)
from backstay.policy.builtin import STANDARD
from backstay.policy.retry import attempt_limit
from backstay.runtime import ApprovalStatus, RunStatus
from backstay.runtime.engine_adapter import RuntimeTaskAdapter, load_factory
from backstay.store.sqlite.runs import SQLiteRunStore
from backstay.taxonomy import FailureKind
from backstay.testing.fakeclock import FakeClock

KEY = "sk-ant-api03-ENGINEcanary0123456789abcdefABCDEFghij"
# A run's model calls follow the standard policy: the attempts one server error gets.
SERVER_ERROR_ATTEMPTS = attempt_limit(STANDARD, FailureKind.SERVER_ERROR)


def _spec(workspace: Path, url: str, **config: Any) -> TaskSpec:
    return reference_agent_task(workspace, url, key=KEY, **config)


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


def _outage_specs(workspace: Path, url: str, **config: Any) -> list[TaskSpec]:
    first = _spec(workspace, url, **config)
    second = dataclasses.replace(first, task_id="notes-2")
    return [first, second]


def _run_batch(state_dir: Path, specs: list[TaskSpec]) -> list[TaskState]:
    adapter = RuntimeTaskAdapter()
    with Engine(
        state_dir,
        adapters={"agent-runtime": adapter},
        clock=FakeClock(),
        env={"ANTHROPIC_API_KEY": KEY},
        concurrency=1,
    ) as engine:
        engine.run_sync(specs)
        tasks = [engine.store.task(spec.operation_id) for spec in specs]
    return [task.state for task in tasks if task is not None]


def test_a_model_in_an_outage_opens_its_circuit_for_the_batchs_later_tasks(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outage = Scenario(faults=(Fault(kind=FaultKind.SERVER_ERROR),))
    with FakeProvider(outage) as fake:
        specs = _outage_specs(workspace, fake.url, breaker={"failure_threshold": 2})
        states = _run_batch(tmp_path / "state", specs)
        requests = fake.stats().requests
    assert states == [TaskState.FAILED, TaskState.FAILED]
    # The first task's second failed call opens the circuit: no call reaches the provider
    # after it, neither the first task's last retry nor any call of the second task.
    assert requests == 2


def test_breaker_false_lets_every_model_call_reach_the_provider(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outage = Scenario(faults=(Fault(kind=FaultKind.SERVER_ERROR),))
    with FakeProvider(outage) as fake:
        specs = _outage_specs(workspace, fake.url, breaker=False)
        states = _run_batch(tmp_path / "state", specs)
        requests = fake.stats().requests
    assert states == [TaskState.FAILED, TaskState.FAILED]
    assert requests == 2 * SERVER_ERROR_ATTEMPTS


def test_the_adapter_keeps_one_breaker_and_limiter_per_model() -> None:
    adapter = RuntimeTaskAdapter()
    breaker = adapter.gates.breaker({}, adapter.name, "claude-sonnet-4-6")
    limiter = adapter.gates.limiter({}, adapter.name, "claude-sonnet-4-6")
    assert breaker is adapter.gates.breaker({}, adapter.name, "claude-sonnet-4-6")
    assert limiter is adapter.gates.limiter({}, adapter.name, "claude-sonnet-4-6")
    assert breaker is not adapter.gates.breaker({}, adapter.name, "claude-haiku-4-5")
    assert adapter.gates.breaker({"breaker": False}, adapter.name, "m") is None
    assert adapter.gates.limiter({"rate_limit": False}, adapter.name, "m") is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("breaker", "yes", "must be true, false or a mapping"),
        ("breaker", {"no_such": 1}, "unknown setting"),
        ("breaker", {"failure_threshold": 0}, "failure_threshold"),
        ("breaker", {"counted_kinds": ["no_such_kind"]}, "no_such_kind"),
        ("rate_limit", {"requests_per_minute": -1}, "requests_per_minute"),
        ("rate_limit", 3, "must be true, false or a mapping"),
    ],
)
def test_a_bad_breaker_or_rate_limit_setting_is_a_config_error(
    key: str, value: Any, message: str
) -> None:
    config = {"agent": "backstay.runtime.reference:make_agent", key: value}
    with pytest.raises(ConfigError, match=message):
        RuntimeTaskAdapter().validate_config(config)
