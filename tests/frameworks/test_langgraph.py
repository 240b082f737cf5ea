"""The LangGraph adapter with the real langgraph package against the fake provider:
approvals, resume, retries, factories, the example."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import RetryPolicy

from backstay.frameworks.langgraph import LangGraphAdapter, make_agent
from backstay.runtime import RunStatus, Runtime

from . import support

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
