"""The Pydantic-AI adapter with the real pydantic-ai package against the fake provider:
approvals, resume, retries, factories, the example."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import ApprovalRequired as PAIApprovalRequired
from pydantic_ai.toolsets import FunctionToolset

from backstay.fakeprovider import FakeProvider, Reply, Scenario, ToolCall
from backstay.frameworks.pydantic_ai import PydanticAIAdapter, make_agent
from backstay.runtime import ApprovalStatus, RunStatus, Runtime, RuntimeSettings, ToolPolicy
from backstay.store.sqlite.runs import SQLiteRunStore

from . import support

EXAMPLE = support.EXAMPLES / "pydantic-ai"


def make(base_url: str) -> PydanticAIAdapter:
    return PydanticAIAdapter(base_url=base_url, api_key="test-key")


def test_an_approval_pauses_the_run_and_resume_continues_the_agent(tmp_path: Path) -> None:
    support.check_approval_then_resume(make, tmp_path)


def test_a_rejected_call_is_not_run_and_the_agent_goes_on(tmp_path: Path) -> None:
    support.check_rejection_then_resume(make, tmp_path)


def test_an_interrupted_run_resumes(tmp_path: Path) -> None:
    support.check_interrupted_run_resumes(make, tmp_path)


def test_a_rate_limit_is_retried_by_backstay_not_by_pydantic_ai(tmp_path: Path) -> None:
    support.check_rate_limit_retried_by_backstay_only(make, tmp_path)


def test_make_agent_reads_the_suite_task_config(monkeypatch: pytest.MonkeyPatch) -> None:
    support.check_make_agent_reads_the_config(make_agent, EXAMPLE, "pai_agent:build", monkeypatch)


def test_an_agent_that_is_not_module_function_is_a_config_error() -> None:
    support.check_agent_not_module_function_is_a_config_error(make_agent)


def test_the_example_runs_against_the_fake_provider(tmp_path: Path) -> None:
    support.check_example_runs(EXAMPLE, tmp_path)


def test_an_agent_built_with_another_model_still_calls_through_the_gate() -> None:
    def build(kit: Any) -> Any:
        return Agent("test", toolsets=[kit.toolset])  # pydantic-ai's offline test model

    with FakeProvider(Scenario(reply=Reply(text="From the gate."))) as fake:
        adapter = PydanticAIAdapter(agent=build, base_url=fake.url + "/v1", api_key="k")
        record = asyncio.run(Runtime(adapter).run("hello"))
        assert fake.stats().requests == 1
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert record.results[0].output["answer"] == "From the gate."
    assert record.usage.api_calls == 1


STYLES = pytest.mark.parametrize("style", ["tool", "tool_plain", "tools", "toolset"])
STAMP = ToolCall(name="stamp", arguments={"text": "x"})


def _own_tool_agent(style: str, stamped: list[str]) -> Callable[[Any], Agent[Any, Any]]:
    """A factory whose agent registers its own ``stamp`` tool (not from the kit), the way
    ``style`` says; each real call of it appends to ``stamped``."""

    def stamp(text: str) -> str:
        stamped.append(text)
        return "stamped"

    def build(kit: Any) -> Agent[Any, Any]:
        if style == "tools":
            return Agent(kit.model, tools=[stamp], toolsets=[kit.toolset])
        if style == "toolset":
            return Agent(kit.model, toolsets=[kit.toolset, FunctionToolset([stamp])])
        agent: Agent[Any, Any] = Agent(kit.model, toolsets=[kit.toolset])
        if style == "tool":

            @agent.tool(name="stamp")
            def stamp_with_context(ctx: RunContext[Any], text: str) -> str:
                return stamp(text)

            return agent
        agent.tool_plain(stamp)
        return agent

    return build


def _run_own_tool(style: str, policy: ToolPolicy) -> tuple[Any, list[str], int]:
    stamped: list[str] = []
    with FakeProvider(Scenario(reply=Reply(tool_call=STAMP, text="Stamped."))) as fake:
        adapter = PydanticAIAdapter(
            agent=_own_tool_agent(style, stamped), base_url=fake.url + "/v1", api_key="k"
        )
        runtime = Runtime(adapter, settings=RuntimeSettings(tools=policy))
        record = asyncio.run(runtime.run("stamp it"))
        return record, stamped, fake.stats().requests


@STYLES
def test_an_agents_own_tool_off_the_allowlist_is_never_invoked_and_the_run_escalates(
    style: str,
) -> None:
    record, stamped, _ = _run_own_tool(style, ToolPolicy(allowed={"write_file"}))
    assert stamped == []
    assert record.status is RunStatus.ESCALATED
    assert record.failure is not None
    assert record.failure.code == "ERR_TOOL_NOT_ALLOWED"


@STYLES
def test_an_agents_own_tool_on_the_allowlist_runs_through_the_gate(style: str) -> None:
    record, stamped, requests = _run_own_tool(style, ToolPolicy(allowed={"stamp"}))
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert stamped == ["x"]
    assert requests == 2
    assert record.results[0].output == {"answer": "Stamped.", "tool_calls": 1}


def test_an_agents_own_tool_that_needs_approval_pauses_the_run_before_it_runs() -> None:
    record, stamped, _ = _run_own_tool(
        "tool_plain", ToolPolicy(allowed={"stamp"}, approval={"stamp"})
    )
    assert record.status is RunStatus.PAUSED
    assert record.failure is not None
    assert record.failure.code == "ERR_APPROVAL_REQUIRED"
    assert stamped == []


def test_an_agents_own_tool_runs_once_approved_on_resume(tmp_path: Path) -> None:
    stamped: list[str] = []
    policy = ToolPolicy(allowed={"stamp"}, approval={"stamp"})
    with FakeProvider(Scenario(reply=Reply(tool_call=STAMP, text="Stamped."))) as fake:

        def runtime() -> Runtime:
            adapter = PydanticAIAdapter(
                agent=_own_tool_agent("tool_plain", stamped),
                base_url=fake.url + "/v1",
                api_key="k",
            )
            store = SQLiteRunStore(tmp_path / "state.sqlite")
            return Runtime(adapter, settings=RuntimeSettings(tools=policy), store=store)

        first = asyncio.run(runtime().run("stamp it", tenant="acme"))
        assert first.status is RunStatus.PAUSED
        store = SQLiteRunStore(tmp_path / "state.sqlite")
        (pending,) = store.approvals("acme")
        store.decide("acme", pending.id, ApprovalStatus.APPROVED)
        second = asyncio.run(runtime().resume(first.run_id, tenant="acme"))
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert stamped == ["x"]


def _approval_agent(stamped: list[str], *, declared: bool) -> Callable[[Any], Agent[Any, Any]]:
    """An agent whose own ``stamp`` tool needs a human's approval: declared with
    ``requires_approval=True``, or raising ``ApprovalRequired`` until approved."""

    def build(kit: Any) -> Agent[Any, Any]:
        agent: Agent[Any, Any] = Agent(kit.model, toolsets=[kit.toolset])
        if declared:

            @agent.tool_plain(requires_approval=True)
            def stamp(text: str) -> str:
                stamped.append(text)
                return "stamped"

        else:

            @agent.tool
            def stamp(ctx: RunContext[Any], text: str) -> str:
                if not ctx.tool_call_approved:
                    raise PAIApprovalRequired
                stamped.append(text)
                return "stamped"

        return agent

    return build


def _approve_on_resume(
    tmp_path: Path, *, declared: bool, status: ApprovalStatus, **decision: Any
) -> tuple[Any, Any, list[str]]:
    stamped: list[str] = []
    policy = RuntimeSettings(tools=ToolPolicy(allowed={"stamp"}))
    with FakeProvider(Scenario(reply=Reply(tool_call=STAMP, text="Stamped."))) as fake:

        def runtime() -> Runtime:
            adapter = PydanticAIAdapter(
                agent=_approval_agent(stamped, declared=declared),
                base_url=fake.url + "/v1",
                api_key="k",
            )
            return Runtime(adapter, settings=policy, store=SQLiteRunStore(tmp_path / "s.sqlite"))

        first = asyncio.run(runtime().run("stamp it", tenant="acme"))
        assert stamped == []
        store = SQLiteRunStore(tmp_path / "s.sqlite")
        (pending,) = store.approvals("acme")
        assert (pending.tool, dict(pending.arguments)) == ("stamp", {"text": "x"})
        store.decide("acme", pending.id, status, **decision)
        second = asyncio.run(runtime().resume(first.run_id, tenant="acme"))
    return first, second, stamped


def test_a_requires_approval_tool_pauses_as_a_durable_approval_not_deferred_requests(
    tmp_path: Path,
) -> None:
    first, second, stamped = _approve_on_resume(
        tmp_path, declared=True, status=ApprovalStatus.APPROVED
    )
    assert first.status is RunStatus.PAUSED
    assert first.failure is not None
    assert first.failure.code == "ERR_APPROVAL_REQUIRED"
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert stamped == ["x"]


def test_a_requires_approval_tool_runs_with_the_edited_arguments(tmp_path: Path) -> None:
    _, second, stamped = _approve_on_resume(
        tmp_path, declared=True, status=ApprovalStatus.EDITED, edited_arguments={"text": "y"}
    )
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert stamped == ["y"]


def test_a_rejected_requires_approval_tool_is_not_run(tmp_path: Path) -> None:
    _, second, stamped = _approve_on_resume(
        tmp_path, declared=True, status=ApprovalStatus.REJECTED, note="no"
    )
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert stamped == []


def test_a_tool_raising_approval_required_waits_for_backstays_approval(tmp_path: Path) -> None:
    first, second, stamped = _approve_on_resume(
        tmp_path, declared=False, status=ApprovalStatus.APPROVED
    )
    assert first.status is RunStatus.PAUSED
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert stamped == ["x"]
