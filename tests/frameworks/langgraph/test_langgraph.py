"""The LangGraph adapter with the real langgraph package against the fake provider:
approvals, resume, retries, factories, the example."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import RetryPolicy
from tests.frameworks import support

from backstay.fakeprovider import FakeProvider, Reply, Scenario, ToolCall
from backstay.frameworks.langgraph import LangGraphAdapter, make_agent
from backstay.runtime import RunStatus, Runtime, RuntimeSettings, ToolPolicy, gated

EXAMPLE = support.EXAMPLES / "langgraph"


def make(base_url: str) -> LangGraphAdapter:
    return LangGraphAdapter(base_url=base_url, api_key="test-key")


def test_an_approval_pauses_the_run_and_resume_continues_the_graph(tmp_path: Path) -> None:
    support.check_approval_then_resume(make, tmp_path)


def test_a_rejected_call_is_not_run_and_the_graph_goes_on(tmp_path: Path) -> None:
    support.check_rejection_then_resume(make, tmp_path)


def test_an_interrupted_run_resumes(tmp_path: Path) -> None:
    support.check_interrupted_run_resumes(make, tmp_path)


def test_a_rate_limit_is_retried_by_backstay_not_by_langchain(tmp_path: Path) -> None:
    support.check_rate_limit_retried_by_backstay_only(make, tmp_path)


def test_a_cycling_graph_is_stopped_as_a_step_limit() -> None:
    def build(kit: Any) -> Any:
        def spin(state: MessagesState) -> dict[str, Any]:
            return {}

        graph = StateGraph(MessagesState)
        graph.add_node("spin", spin)
        graph.add_edge(START, "spin")
        graph.add_edge("spin", "spin")
        return graph

    adapter = LangGraphAdapter(agent=build, base_url="http://127.0.0.1:9/v1", recursion_limit=5)
    record = asyncio.run(Runtime(adapter).run("spin"))
    assert record.status is RunStatus.LIMIT_EXCEEDED
    assert record.failure is not None
    assert record.failure.code == "ERR_LIMIT_MAX_STEPS"


def test_a_node_retry_policy_is_removed_so_backstay_is_the_one_retry_loop() -> None:
    attempts: list[int] = []

    def build(kit: Any) -> Any:
        def fails(state: MessagesState) -> dict[str, Any]:
            attempts.append(1)
            raise ValueError("node failed")

        graph = StateGraph(MessagesState)
        graph.add_node("fails", fails, retry_policy=RetryPolicy(max_attempts=5))
        graph.add_edge(START, "fails")
        return graph

    adapter = LangGraphAdapter(agent=build, base_url="http://127.0.0.1:9/v1")
    record = asyncio.run(Runtime(adapter).run("go"))
    assert record.status is RunStatus.FAILED
    assert attempts == [1]


def test_make_agent_reads_the_suite_task_config(monkeypatch: pytest.MonkeyPatch) -> None:
    support.check_make_agent_reads_the_config(make_agent, EXAMPLE, "graph_agent:build", monkeypatch)


def test_an_agent_that_is_not_module_function_is_a_config_error() -> None:
    support.check_agent_not_module_function_is_a_config_error(make_agent)


def test_the_example_runs_against_the_fake_provider(tmp_path: Path) -> None:
    support.check_example_runs(EXAMPLE, tmp_path)


STAMP = ToolCall(name="stamp", arguments={"text": "x"})


def _own_tool_node_graph(stamped: list[str]) -> Callable[[Any], Any]:
    """A factory whose graph runs its own ``stamp`` tool (not from the kit) in a
    ``ToolNode`` of its own; each real call of it appends to ``stamped``."""

    @tool
    def stamp(text: str) -> str:
        """Stamp a text."""
        stamped.append(text)
        return "stamped"

    def build(kit: Any) -> Any:
        model = kit.model.bind_tools([stamp])

        async def agent(state: MessagesState) -> dict[str, Any]:
            return {"messages": [await model.ainvoke(state["messages"])]}

        builder = StateGraph(MessagesState)
        builder.add_node("agent", agent)
        builder.add_node("tools", ToolNode([stamp]))
        builder.add_edge(START, "agent")
        builder.add_conditional_edges("agent", tools_condition)
        builder.add_edge("tools", "agent")
        return builder

    return build


def _run_own_tool_node(policy: ToolPolicy) -> tuple[Any, list[str]]:
    stamped: list[str] = []
    with FakeProvider(Scenario(reply=Reply(tool_call=STAMP, text="Stamped."))) as fake:
        adapter = LangGraphAdapter(
            agent=_own_tool_node_graph(stamped), base_url=fake.url + "/v1", api_key="k"
        )
        runtime = Runtime(adapter, settings=RuntimeSettings(tools=policy))
        return asyncio.run(runtime.run("stamp it")), stamped


def test_a_graphs_own_tool_node_tool_off_the_allowlist_is_never_invoked() -> None:
    record, stamped = _run_own_tool_node(ToolPolicy(allowed={"write_file"}))
    assert stamped == []
    assert record.status is RunStatus.ESCALATED
    assert record.failure is not None
    assert record.failure.code == "ERR_TOOL_NOT_ALLOWED"


def test_a_graphs_own_tool_node_tool_on_the_allowlist_runs_through_the_gate() -> None:
    record, stamped = _run_own_tool_node(ToolPolicy(allowed={"stamp"}))
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert stamped == ["x"]
    assert record.results[0].output == {"answer": "Stamped.", "tool_calls": 1}


def _node_calling_functions(stamped: list[str]) -> Callable[[Any], Any]:
    """A graph whose ``act`` node calls the function the model asked for itself (no
    ``ToolNode``): ``stamp`` decorated with ``@gated``, ``erase`` through ``kit.gated``."""

    @gated
    def stamp(text: str) -> str:
        stamped.append(text)
        return "stamped"

    def build(kit: Any) -> Any:
        functions = {"stamp": stamp, "erase": kit.gated(lambda text: stamped.clear(), name="erase")}
        model = kit.model.bind_tools([{"name": n, "parameters": {}} for n in functions])

        async def act(state: MessagesState) -> dict[str, Any]:
            reply = await model.ainvoke(state["messages"])
            for call in reply.tool_calls:
                await functions[call["name"]](**call["args"])
            return {"messages": [reply]}

        builder = StateGraph(MessagesState)
        builder.add_node("act", act)
        builder.add_edge(START, "act")
        return builder

    return build


@pytest.mark.parametrize("asked", ["stamp", "erase"])
def test_a_function_a_node_calls_is_gated_by_the_allowlist(asked: str) -> None:
    stamped = ["kept"]
    call = ToolCall(name=asked, arguments={"text": "x"})
    with FakeProvider(Scenario(reply=Reply(tool_call=call))) as fake:
        adapter = LangGraphAdapter(
            agent=_node_calling_functions(stamped), base_url=fake.url + "/v1", api_key="k"
        )
        policy = RuntimeSettings(tools=ToolPolicy(allowed={"read_file"}))
        record = asyncio.run(Runtime(adapter, settings=policy).run("go"))
    assert record.status is RunStatus.ESCALATED
    assert record.failure is not None
    assert record.failure.code == "ERR_TOOL_NOT_ALLOWED"
    assert stamped == ["kept"]


def test_a_function_a_node_calls_on_the_allowlist_runs() -> None:
    stamped: list[str] = []
    with FakeProvider(Scenario(reply=Reply(tool_call=STAMP))) as fake:
        adapter = LangGraphAdapter(
            agent=_node_calling_functions(stamped), base_url=fake.url + "/v1", api_key="k"
        )
        policy = RuntimeSettings(tools=ToolPolicy(allowed={"stamp"}))
        record = asyncio.run(Runtime(adapter, settings=policy).run("go"))
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert stamped == ["x"]
