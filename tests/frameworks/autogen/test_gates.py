"""An AutoGen agent's own tools and its human in the loop through backstay's gates, with
the real autogen-agentchat package against the fake provider: a tool given to an
``AssistantAgent`` is gated by the allowlist; a ``UserProxyAgent`` and a hand-off to the
user become durable approvals that ``resume`` (a new runtime and adapter) answers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent, UserProxyAgent
from autogen_agentchat.conditions import SourceMatchTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.tools import FunctionTool, StaticWorkbench, ToolSchema, Workbench

from backstay.fakeprovider import FakeProvider, Reply, Scenario, ToolCall
from backstay.frameworks.autogen import AutoGenAdapter
from backstay.frameworks.autogen._gates import decision_text
from backstay.runtime import (
    ApprovalStatus,
    HumanDecision,
    RunRecord,
    RunStatus,
    Runtime,
    RuntimeSettings,
    ToolPolicy,
)
from backstay.store.sqlite.runs import SQLiteRunStore

TENANT = "acme"
STAMP = ToolCall(name="stamp", arguments={"text": "x"})
HANDOFF = ToolCall(name="transfer_to_user", arguments={})


def _stamping(stamped: list[str]) -> Callable[[Any], Any]:
    def stamp(text: str) -> str:
        """Stamp a text."""
        stamped.append(text)
        return "stamped"

    def build(kit: Any) -> Any:
        return AssistantAgent(
            "assistant", model_client=kit.model_client, tools=[stamp], reflect_on_tool_use=True
        )

    return build


def _run_stamping(policy: ToolPolicy) -> tuple[RunRecord, list[str]]:
    stamped: list[str] = []
    with FakeProvider(Scenario(reply=Reply(tool_call=STAMP, text="Stamped."))) as fake:
        adapter = AutoGenAdapter(agent=_stamping(stamped), base_url=fake.url + "/v1", api_key="k")
        runtime = Runtime(adapter, settings=RuntimeSettings(tools=policy))
        return asyncio.run(asyncio.wait_for(runtime.run("stamp it"), 60)), stamped


def test_a_tool_given_to_the_agent_off_the_allowlist_is_never_invoked() -> None:
    record, stamped = _run_stamping(ToolPolicy(allowed={"write_file"}))
    assert stamped == []
    assert record.status is RunStatus.ESCALATED
    assert record.failure is not None
    assert record.failure.code == "ERR_TOOL_NOT_ALLOWED"


def test_a_tool_given_to_the_agent_on_the_allowlist_runs_through_the_gate() -> None:
    record, stamped = _run_stamping(ToolPolicy(allowed={"stamp"}))
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert stamped == ["x"]
    assert record.results[0].output["tool_calls"] == 1


class _OwnWorkbench(Workbench):
    """A workbench of the agent's own kind (as an MCP server's is): not one backstay can
    look into, so not one it can gate."""

    def __init__(self, inner: StaticWorkbench) -> None:
        self.inner = inner

    async def list_tools(self) -> list[ToolSchema]:
        return await self.inner.list_tools()

    async def call_tool(self, name: str, arguments: Any = None, *args: Any, **kw: Any) -> Any:
        return await self.inner.call_tool(name, arguments, *args, **kw)

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def reset(self) -> None: ...

    async def save_state(self) -> Mapping[str, Any]:
        return {}

    async def load_state(self, state: Mapping[str, Any]) -> None: ...


def test_an_agent_with_a_workbench_backstay_cannot_gate_is_refused_before_any_tool_runs() -> None:
    stamped: list[str] = []

    def stamp(text: str) -> str:
        """Stamp a text."""
        stamped.append(text)
        return "stamped"

    def build(kit: Any) -> Any:
        bench = _OwnWorkbench(StaticWorkbench([FunctionTool(stamp, description="Stamp.")]))
        return AssistantAgent("assistant", model_client=kit.model_client, workbench=bench)

    with FakeProvider(Scenario(reply=Reply(tool_call=STAMP, text="Stamped."))) as fake:
        adapter = AutoGenAdapter(agent=build, base_url=fake.url + "/v1", api_key="k")
        runtime = Runtime(adapter, settings=RuntimeSettings(tools=ToolPolicy(allowed={"x"})))
        record = asyncio.run(asyncio.wait_for(runtime.run("stamp it"), 60))
        served = fake.stats().requests
    assert stamped == []
    assert served == 0
    assert record.status is RunStatus.ESCALATED
    assert record.failure is not None
    assert record.failure.code == "ERR_TOOL_NOT_ALLOWED"
    assert "_OwnWorkbench" in record.failure.message


def _with_user_proxy(kit: Any) -> Any:
    assistant = AssistantAgent("assistant", model_client=kit.model_client)
    user = UserProxyAgent("human")
    return RoundRobinGroupChat(
        [assistant, user], termination_condition=SourceMatchTermination(["human"])
    )


def _handing_off(kit: Any) -> Any:
    return AssistantAgent("assistant", model_client=kit.model_client, handoffs=["user"])


def _pause_decide_resume(
    tmp_path: Path, build: Any, reply: Reply, status: ApprovalStatus, **decision: Any
) -> tuple[RunRecord, RunRecord, dict[str, Any]]:
    with FakeProvider(Scenario(reply=reply)) as fake:

        def runtime() -> Runtime:
            adapter = AutoGenAdapter(agent=build, base_url=fake.url + "/v1", api_key="k")
            return Runtime(adapter, store=SQLiteRunStore(tmp_path / "state.sqlite"))

        first = asyncio.run(asyncio.wait_for(runtime().run("draft", tenant=TENANT), 60))
        store = SQLiteRunStore(tmp_path / "state.sqlite")
        (pending,) = store.approvals(TENANT)
        assert pending.tool == "user"
        store.decide(TENANT, pending.id, status, **decision)
        resumed = runtime().resume(first.run_id, tenant=TENANT)
        second = asyncio.run(asyncio.wait_for(resumed, 60))
    return first, second, dict(pending.arguments)


def test_a_user_proxy_pauses_the_run_and_resume_gives_it_the_answer(tmp_path: Path) -> None:
    first, second, asked = _pause_decide_resume(
        tmp_path,
        _with_user_proxy,
        Reply(text="A draft."),
        ApprovalStatus.EDITED,
        edited_arguments={"answer": "blue"},
    )
    assert first.status is RunStatus.PAUSED
    assert first.failure is not None
    assert first.failure.code == "ERR_APPROVAL_REQUIRED"
    assert "prompt" in asked
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert second.results[-1].output["answer"] == "blue"


def test_a_handoff_to_the_user_pauses_and_the_agent_goes_on_with_the_decision(
    tmp_path: Path,
) -> None:
    first, second, asked = _pause_decide_resume(
        tmp_path, _handing_off, Reply(tool_call=HANDOFF, text="Done."), ApprovalStatus.APPROVED
    )
    assert first.status is RunStatus.PAUSED
    assert (asked["handoff_to"], asked["from"]) == ("user", "assistant")
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert second.results[-1].output["answer"] == "Done."


@pytest.mark.parametrize(
    ("decision", "text"),
    [
        (HumanDecision(status=ApprovalStatus.APPROVED), "approved"),
        (HumanDecision(status=ApprovalStatus.REJECTED, note="no"), "rejected: no"),
        (HumanDecision(status=ApprovalStatus.EDITED, edited={"answer": "blue"}), "blue"),
        (HumanDecision(status=ApprovalStatus.EDITED, edited={"a": 1}), '{"a": 1}'),
    ],
)
def test_the_decision_is_said_to_the_agent_as_text(decision: HumanDecision, text: str) -> None:
    assert decision_text(decision) == text
