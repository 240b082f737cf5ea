"""A LlamaIndex workflow's ``InputRequiredEvent`` as a durable approval, with the real
llama-index-workflows package against the fake provider: the run pauses, the decision
is recorded in the run store, and ``resume`` (a new runtime and adapter) restores the
workflow's context and sends the step its ``HumanResponseEvent``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from workflows import Context, Workflow, step
from workflows.events import HumanResponseEvent, InputRequiredEvent, StartEvent, StopEvent

from backstay.fakeprovider import FakeProvider, Reply, Scenario
from backstay.frameworks.llamaindex import LlamaIndexAdapter
from backstay.frameworks.llamaindex._run import human_response
from backstay.runtime import ApprovalStatus, HumanDecision, RunRecord, RunStatus, Runtime
from backstay.store.sqlite.runs import SQLiteRunStore

TENANT = "acme"


class Review(Workflow):
    """The model drafts; a step asks a human about the draft (returning the request);
    the human's response ends the run."""

    def __init__(self, kit: Any) -> None:
        super().__init__(timeout=None)
        self.kit = kit

    @step
    async def draft(self, ctx: Context, ev: StartEvent) -> InputRequiredEvent:
        reply = await self.kit.chat([{"role": "user", "content": ev.get("task")}])
        return InputRequiredEvent(prefix="publish?", draft=reply.content)

    @step
    async def decide(self, ev: HumanResponseEvent) -> StopEvent:
        return StopEvent(result=f"{ev.get('decision')}: {ev.response} {ev.get('reason')}".strip())


class Waiting(Workflow):
    """One step waiting for the human in place (``ctx.wait_for_event``)."""

    def __init__(self, kit: Any) -> None:
        super().__init__(timeout=None)
        self.kit = kit

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        reply = await self.kit.chat([{"role": "user", "content": ev.get("task")}])
        answer = await ctx.wait_for_event(
            HumanResponseEvent,
            waiter_event=InputRequiredEvent(prefix="colour?", draft=reply.content),
            waiter_id="colour",
        )
        return StopEvent(result=answer.response)


def _runtime(url: str, state: Path, workflow: Any) -> Runtime:
    adapter = LlamaIndexAdapter(agent=workflow, base_url=url + "/v1", api_key="test-key")
    return Runtime(adapter, store=SQLiteRunStore(state / "state.sqlite"))


def _pause_decide_resume(
    tmp_path: Path, workflow: Any, status: ApprovalStatus, **decision: Any
) -> tuple[RunRecord, RunRecord, dict[str, Any], int]:
    with FakeProvider(Scenario(reply=Reply(text="A draft."))) as fake:
        run = _runtime(fake.url, tmp_path, workflow).run("draft", tenant=TENANT)
        first = asyncio.run(asyncio.wait_for(run, 60))
        store = SQLiteRunStore(tmp_path / "state.sqlite")
        (pending,) = store.approvals(TENANT)
        assert pending.tool == "input"
        store.decide(TENANT, pending.id, status, **decision)
        resumed = _runtime(fake.url, tmp_path, workflow).resume(first.run_id, tenant=TENANT)
        second = asyncio.run(asyncio.wait_for(resumed, 60))
        return first, second, dict(pending.arguments), fake.stats().requests


def test_an_input_request_pauses_the_run_and_resume_sends_the_decision(tmp_path: Path) -> None:
    first, second, asked, requests = _pause_decide_resume(
        tmp_path, Review, ApprovalStatus.APPROVED, note="fine"
    )
    assert first.status is RunStatus.PAUSED
    assert first.failure is not None
    assert first.failure.code == "ERR_APPROVAL_REQUIRED"
    assert asked == {"prefix": "publish?", "draft": "A draft."}
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert second.results[-1].output["answer"] == "approve: approved fine"
    assert requests == 1  # the draft is not asked for again


def test_a_step_waiting_in_place_gets_the_edited_answer_on_resume(tmp_path: Path) -> None:
    first, second, asked, _ = _pause_decide_resume(
        tmp_path, Waiting, ApprovalStatus.EDITED, edited_arguments={"answer": "blue"}
    )
    assert first.status is RunStatus.PAUSED
    assert asked["prefix"] == "colour?"
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert second.results[-1].output["answer"] == "blue"


def test_a_rejection_reaches_the_step_with_its_reason(tmp_path: Path) -> None:
    _, second, _, _ = _pause_decide_resume(
        tmp_path, Review, ApprovalStatus.REJECTED, note="off topic"
    )
    assert second.results[-1].output["answer"] == "reject: rejected off topic"


@pytest.mark.parametrize(
    ("decision", "response"),
    [
        (HumanDecision(status=ApprovalStatus.APPROVED), "approved"),
        (HumanDecision(status=ApprovalStatus.EDITED, edited={"answer": 3}), "3"),
        (HumanDecision(status=ApprovalStatus.EDITED, edited={"a": 1}), '{"a": 1}'),
    ],
)
def test_the_human_response_carries_the_answer_as_its_text(
    decision: HumanDecision, response: str
) -> None:
    assert human_response(decision).response == response
