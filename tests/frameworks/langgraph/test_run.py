"""A LangGraph node's ``interrupt()`` as a durable approval, with the real langgraph
package against the fake provider: the run pauses, the decision is recorded in the run
store, and ``resume`` (a new runtime and adapter, as another process would build)
answers the interrupt with ``Command(resume=decision)``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

from backstay.fakeprovider import FakeProvider, Reply, Scenario
from backstay.frameworks.langgraph import LangGraphAdapter
from backstay.runtime import ApprovalStatus, RunRecord, RunStatus, Runtime
from backstay.store.sqlite.runs import SQLiteRunStore

TENANT = "acme"


def review_graph(kit: Any) -> Any:
    """The model drafts; ``review`` asks a human about the draft and answers with what
    the human decided."""

    async def draft(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await kit.model.ainvoke(state["messages"])]}

    def review(state: MessagesState) -> dict[str, Any]:
        decision = interrupt({"question": "publish?", "draft": state["messages"][-1].text})
        if decision["type"] == "approve":
            text = "published"
        elif decision["type"] == "edit":
            text = f"published as {decision['args']['title']}"
        else:
            text = f"dropped: {decision.get('reason', '')}"
        return {"messages": [AIMessage(content=text)]}

    builder = StateGraph(MessagesState)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", END)
    return builder


def _asking_first_graph(kit: Any) -> Any:
    """The first node asks before anything else."""

    def ask(state: MessagesState) -> dict[str, Any]:
        decision = interrupt("which colour?")
        return {"messages": [AIMessage(content=str(decision.get("args", {}).get("colour")))]}

    builder = StateGraph(MessagesState)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder


def _runtime(url: str, state: Path, graph: Any) -> Runtime:
    adapter = LangGraphAdapter(agent=graph, base_url=url + "/v1", api_key="test-key")
    return Runtime(adapter, store=SQLiteRunStore(state / "state.sqlite"))


def _pause_decide_resume(
    tmp_path: Path, graph: Any, status: ApprovalStatus, **decision: Any
) -> tuple[RunRecord, RunRecord, dict[str, Any], int]:
    with FakeProvider(Scenario(reply=Reply(text="A draft."))) as fake:
        first = asyncio.run(_runtime(fake.url, tmp_path, graph).run("draft", tenant=TENANT))
        store = SQLiteRunStore(tmp_path / "state.sqlite")
        (pending,) = store.approvals(TENANT)
        asked = dict(pending.arguments)
        assert pending.tool == "interrupt"
        store.decide(TENANT, pending.id, status, **decision)
        second = asyncio.run(
            _runtime(fake.url, tmp_path, graph).resume(first.run_id, tenant=TENANT)
        )
        return first, second, asked, fake.stats().requests


def test_an_interrupt_pauses_the_run_as_a_durable_approval(tmp_path: Path) -> None:
    first, second, asked, requests = _pause_decide_resume(
        tmp_path, review_graph, ApprovalStatus.APPROVED
    )
    assert first.status is RunStatus.PAUSED
    assert first.failure is not None
    assert first.failure.code == "ERR_APPROVAL_REQUIRED"
    assert first.failure.details["tenant"] == TENANT
    assert asked == {"question": "publish?", "draft": "A draft."}
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert second.results[-1].output["answer"] == "published"
    assert requests == 1  # the draft made before the pause is not asked for again


def test_an_edited_decision_reaches_the_node_as_its_args(tmp_path: Path) -> None:
    _, second, _, _ = _pause_decide_resume(
        tmp_path, review_graph, ApprovalStatus.EDITED, edited_arguments={"title": "Final"}
    )
    assert second.results[-1].output["answer"] == "published as Final"


def test_a_rejection_reaches_the_node_with_its_reason(tmp_path: Path) -> None:
    _, second, _, _ = _pause_decide_resume(
        tmp_path, review_graph, ApprovalStatus.REJECTED, note="off topic"
    )
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert second.results[-1].output["answer"] == "dropped: off topic"


def test_an_interrupt_in_the_first_node_resumes_from_the_input(tmp_path: Path) -> None:
    first, second, asked, _ = _pause_decide_resume(
        tmp_path, _asking_first_graph, ApprovalStatus.EDITED, edited_arguments={"colour": "blue"}
    )
    assert first.status is RunStatus.PAUSED
    assert asked == {"value": "which colour?"}
    assert second.results[-1].output["answer"] == "blue"


def test_a_resume_before_the_decision_pauses_again_without_running_the_node_past_it(
    tmp_path: Path,
) -> None:
    with FakeProvider(Scenario(reply=Reply(text="A draft."))) as fake:
        first = asyncio.run(_runtime(fake.url, tmp_path, review_graph).run("draft", tenant=TENANT))
        again = asyncio.run(
            _runtime(fake.url, tmp_path, review_graph).resume(first.run_id, tenant=TENANT)
        )
    assert again.status is RunStatus.PAUSED
    assert len(SQLiteRunStore(tmp_path / "state.sqlite").approvals(TENANT)) == 1
