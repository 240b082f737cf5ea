"""The LlamaIndex adapter with the real llama-index-workflows package against the fake provider:
approvals, resume, retries, factories, the example."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.frameworks import support
from workflows import Workflow, step
from workflows.events import StartEvent, StopEvent
from workflows.retry_policy import retry_policy, stop_after_attempt

from backstay.fakeprovider import FakeProvider, Reply, Scenario, ToolCall
from backstay.frameworks.llamaindex import LlamaIndexAdapter, make_agent
from backstay.runtime import RunStatus, Runtime, RuntimeSettings, Tool, ToolPolicy, gated

EXAMPLE = support.EXAMPLES / "llamaindex"
URL = "http://127.0.0.1:9/v1"


def make(base_url: str) -> LlamaIndexAdapter:
    return LlamaIndexAdapter(base_url=base_url, api_key="test-key")


def test_an_approval_pauses_the_run_and_resume_continues_the_workflow(tmp_path: Path) -> None:
    support.check_approval_then_resume(make, tmp_path)


def test_a_rejected_call_is_not_run_and_the_workflow_goes_on(tmp_path: Path) -> None:
    support.check_rejection_then_resume(make, tmp_path)


def test_an_interrupted_run_resumes(tmp_path: Path) -> None:
    support.check_interrupted_run_resumes(make, tmp_path)


def test_a_rate_limit_is_retried_by_backstay_not_by_llamaindex(tmp_path: Path) -> None:
    support.check_rate_limit_retried_by_backstay_only(make, tmp_path)


def test_make_agent_reads_the_suite_task_config(monkeypatch: pytest.MonkeyPatch) -> None:
    support.check_make_agent_reads_the_config(
        make_agent, EXAMPLE, "notes_workflow:build", monkeypatch
    )


def test_an_agent_that_is_not_module_function_is_a_config_error() -> None:
    support.check_agent_not_module_function_is_a_config_error(make_agent)


def test_the_example_runs_against_the_fake_provider(tmp_path: Path) -> None:
    support.check_example_runs(EXAMPLE, tmp_path)


def test_a_step_retry_policy_is_removed_so_backstay_is_the_one_retry_loop() -> None:
    attempts: list[int] = []

    class Fails(Workflow):
        @step(retry_policy=retry_policy(stop=stop_after_attempt(5)))
        async def only(self, ev: StartEvent) -> StopEvent:
            attempts.append(1)
            raise ValueError("step failed")

    adapter = LlamaIndexAdapter(agent=lambda kit: Fails(timeout=None), base_url=URL)
    record = asyncio.run(Runtime(adapter).run("go"))
    assert record.status is RunStatus.FAILED
    assert attempts == [1]


class _CallsItsFunction(Workflow):
    """One step: the model names a function, the step calls it itself (``@gated``)."""

    def __init__(self, kit: Any, stamped: list[str]) -> None:
        super().__init__(timeout=None)
        self.kit = kit

        @gated
        def stamp(text: str) -> str:
            stamped.append(text)
            return "stamped"

        self.functions = {"stamp": stamp, "erase": kit.gated(stamped.clear, name="erase")}

    @step
    async def act(self, ev: StartEvent) -> StopEvent:
        reply = await self.kit.chat([{"role": "user", "content": ev.get("task")}])
        for call in reply.tool_calls or []:
            await self.functions[call.function.name](**json.loads(call.function.arguments))
        return StopEvent(result="done")


def _run_function(asked: ToolCall, allowed: set[str]) -> tuple[Any, list[str]]:
    stamped = ["kept"]
    with FakeProvider(Scenario(reply=Reply(tool_call=asked))) as fake:
        adapter = LlamaIndexAdapter(
            agent=lambda kit: _CallsItsFunction(kit, stamped),
            base_url=fake.url + "/v1",
            api_key="k",
            config={},
        )
        # The model is offered the functions as tools: the kit offers the registered ones.
        policy = RuntimeSettings(tools=ToolPolicy(allowed=allowed))
        runtime = Runtime(adapter, settings=policy, tools=[_offered("stamp"), _offered("erase")])
        return asyncio.run(runtime.run("go")), stamped


def _offered(name: str) -> Tool:
    return Tool(name=name, fn=lambda **_: "never called", parameters={"type": "object"})


def test_a_function_a_step_calls_off_the_allowlist_is_never_invoked() -> None:
    record, stamped = _run_function(ToolCall(name="erase"), {"stamp"})
    assert record.status is RunStatus.ESCALATED
    assert record.failure is not None
    assert record.failure.code == "ERR_TOOL_NOT_ALLOWED"
    assert stamped == ["kept"]


def test_a_function_a_step_calls_on_the_allowlist_runs() -> None:
    record, stamped = _run_function(ToolCall(name="stamp", arguments={"text": "x"}), {"stamp"})
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert stamped == ["kept", "x"]
