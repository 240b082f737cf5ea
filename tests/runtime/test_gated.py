"""``gated``: a function of the user's own, called inside a step, through the run's
``ToolGate`` (allowlist, approvals), bound to the run that calls it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.runtime.support import ScriptedFramework

from backstay.runtime import (
    ApprovalStatus,
    ExecutionContext,
    MemoryRunStore,
    RunStatus,
    Runtime,
    RuntimeSettings,
    SecurityViolation,
    Step,
    ToolGate,
    ToolPolicy,
    gated,
)

stamped: list[str] = []


@gated
def stamp(text: str) -> str:
    stamped.append(text)
    return f"stamped {text}"


@gated(name="shout")
async def loud(text: str) -> str:
    stamped.append(text.upper())
    return text.upper()


async def _calls_both(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
    # A step calls its functions in tasks of its own, as frameworks do.
    first = await asyncio.create_task(stamp("a"))
    return [first, await loud(text="b")]


@pytest.fixture(autouse=True)
def _clean() -> None:
    stamped.clear()


def _run(policy: ToolPolicy, store: MemoryRunStore | None = None) -> Any:
    runtime = Runtime(
        ScriptedFramework({"go": _calls_both}),
        settings=RuntimeSettings(tools=policy),
        store=store or MemoryRunStore(),
    )
    return asyncio.run(runtime.run({"actions": ["go"]}, tenant="acme"))


def test_a_gated_function_on_the_allowlist_runs_with_its_arguments() -> None:
    record = _run(ToolPolicy(allowed={"stamp", "shout"}))
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert record.results[0].output == ["stamped a", "B"]
    assert stamped == ["a", "B"]


def test_a_gated_function_off_the_allowlist_is_never_invoked() -> None:
    record = _run(ToolPolicy(allowed={"stamp"}))
    assert record.status is RunStatus.ESCALATED
    assert record.failure is not None
    assert record.failure.code == "ERR_TOOL_NOT_ALLOWED"
    assert stamped == ["a"]  # the call under its name "shout" never ran


def test_a_gated_function_needing_approval_runs_with_the_edited_arguments() -> None:
    store = MemoryRunStore()
    policy = ToolPolicy(allowed={"stamp", "shout"}, approval={"stamp"})
    runtime = Runtime(
        ScriptedFramework({"go": _calls_both}), settings=RuntimeSettings(tools=policy), store=store
    )
    first = asyncio.run(runtime.run({"actions": ["go"]}, tenant="acme"))
    assert first.status is RunStatus.PAUSED
    assert stamped == []
    (pending,) = store.approvals("acme")
    assert dict(pending.arguments) == {"text": "a"}
    store.decide("acme", pending.id, ApprovalStatus.EDITED, edited_arguments={"text": "z"})
    second = asyncio.run(runtime.resume(first.run_id, tenant="acme"))
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert stamped == ["z", "B"]


def test_a_gated_function_called_outside_a_run_does_not_run() -> None:
    with pytest.raises(SecurityViolation, match="outside a backstay run"):
        asyncio.run(stamp("a"))
    assert stamped == []
