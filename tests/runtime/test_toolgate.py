"""Tool calls through the gate: allowlist, approvals that survive the process, cache,
fallbacks, loops and tenants."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.runtime.support import ScriptedFramework, tool_call

from backstay.runtime import (
    ApprovalStatus,
    ExecutionContext,
    RunStatus,
    Runtime,
    RuntimeSettings,
    Step,
    Tool,
    ToolGate,
    ToolPolicy,
)
from backstay.runtime.store import MemoryRunStore, RunStore
from backstay.store.sqlite.runs import SQLiteRunStore


def _run(runtime: Runtime, input: Any, **kwargs: Any) -> Any:
    return asyncio.run(runtime.run(input, **kwargs))


def _counting(name: str, calls: list[dict[str, Any]], result: Any = "done") -> Tool:
    def fn(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return result

    return Tool(name=name, fn=fn)


def test_a_tool_off_the_allowlist_is_never_invoked_and_the_run_escalates() -> None:
    calls: list[dict[str, Any]] = []
    runtime = Runtime(
        ScriptedFramework({"a": tool_call("delete_all", really=True)}),
        tools=[_counting("delete_all", calls)],
        settings=RuntimeSettings(tools=ToolPolicy(allowed={"read"})),
    )
    record = _run(runtime, {"actions": ["a"]})
    assert record.status is RunStatus.ESCALATED
    assert record.failure is not None
    assert record.failure.code == "ERR_TOOL_NOT_ALLOWED"
    assert calls == []


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunStore]:
    if request.param == "memory":
        yield MemoryRunStore()
        return
    with SQLiteRunStore(tmp_path / "state.sqlite") as sqlite:
        yield sqlite


def _approval_runtime(store: RunStore, calls: list[dict[str, Any]]) -> Runtime:
    return Runtime(
        ScriptedFramework({"w": tool_call("send", to="ann@example.org")}),
        tools=[_counting("send", calls)],
        settings=RuntimeSettings(tools=ToolPolicy(allowed={"send"}, approval={"send"})),
        store=store,
    )


def test_a_call_needing_approval_pauses_the_run_with_a_durable_request(store: RunStore) -> None:
    calls: list[dict[str, Any]] = []
    record = _run(_approval_runtime(store, calls), {"actions": ["w"]}, tenant="acme")
    assert record.status is RunStatus.PAUSED
    (approval,) = store.approvals("acme")
    assert approval.tool == "send"
    assert approval.arguments == {"to": "[EMAIL]"}
    assert calls == []


def test_resume_after_an_approval_runs_the_tool_once(store: RunStore) -> None:
    calls: list[dict[str, Any]] = []
    record = _run(_approval_runtime(store, calls), {"actions": ["w"]}, tenant="acme")
    (approval,) = store.approvals("acme")
    store.decide("acme", approval.id, ApprovalStatus.APPROVED)
    # A new runtime, as after a restart: only the store carries the decision.
    resumed = asyncio.run(_approval_runtime(store, calls).resume(record.run_id, tenant="acme"))
    assert resumed.status is RunStatus.SUCCEEDED
    assert calls == [{"to": "ann@example.org"}]


def test_an_edited_approval_runs_the_tool_with_the_edited_arguments(store: RunStore) -> None:
    calls: list[dict[str, Any]] = []
    record = _run(_approval_runtime(store, calls), {"actions": ["w"]}, tenant="acme")
    (approval,) = store.approvals("acme")
    store.decide("acme", approval.id, ApprovalStatus.EDITED, edited_arguments={"to": "bob"})
    asyncio.run(_approval_runtime(store, calls).resume(record.run_id, tenant="acme"))
    assert calls == [{"to": "bob"}]


def test_a_rejected_call_is_not_run_and_the_model_is_told(store: RunStore) -> None:
    calls: list[dict[str, Any]] = []
    record = _run(_approval_runtime(store, calls), {"actions": ["w"]}, tenant="acme")
    (approval,) = store.approvals("acme")
    store.decide("acme", approval.id, ApprovalStatus.REJECTED, note="no")
    resumed = asyncio.run(_approval_runtime(store, calls).resume(record.run_id, tenant="acme"))
    assert calls == []
    assert resumed.results[0].output == {"error": "a human rejected the call of tool 'send'"}


def test_one_tenant_cannot_see_or_decide_another_tenants_approvals(store: RunStore) -> None:
    calls: list[dict[str, Any]] = []
    record = _run(_approval_runtime(store, calls), {"actions": ["w"]}, tenant="acme")
    (approval,) = store.approvals("acme")
    assert store.approvals("rival") == ()
    assert store.load_run("rival", record.run_id) is None
    with pytest.raises(ValueError, match=f"no approval {approval.id}"):
        store.decide("rival", approval.id, ApprovalStatus.APPROVED)


def test_the_tool_cache_is_per_tenant(store: RunStore) -> None:
    calls: list[dict[str, Any]] = []
    runtime = Runtime(
        ScriptedFramework({"r": tool_call("lookup", q="x")}),
        tools=[_counting("lookup", calls, result={"v": 1})],
        settings=RuntimeSettings(tools=ToolPolicy(allowed={"lookup"}, cacheable={"lookup"})),
        store=store,
    )
    _run(runtime, {"actions": ["r"]}, tenant="acme")
    _run(runtime, {"actions": ["r"]}, tenant="acme")
    assert len(calls) == 1
    _run(runtime, {"actions": ["r"]}, tenant="rival")
    assert len(calls) == 2


def test_a_failing_tool_goes_to_its_fallback() -> None:
    def broken(**kwargs: Any) -> Any:
        raise OSError("disk on fire at /secret/internal/path")

    calls: list[dict[str, Any]] = []
    runtime = Runtime(
        ScriptedFramework({"r": tool_call("primary", q="x")}),
        tools=[Tool(name="primary", fn=broken), _counting("backup", calls)],
        settings=RuntimeSettings(
            tools=ToolPolicy(allowed={"primary", "backup"}, fallbacks={"primary": "backup"})
        ),
    )
    record = _run(runtime, {"actions": ["r"]})
    assert record.results[0].output == "done"
    assert calls == [{"q": "x"}]


def test_a_failing_tool_without_fallback_is_skipped_without_internals() -> None:
    def broken(**kwargs: Any) -> Any:
        raise OSError("disk on fire at /secret/internal/path")

    runtime = Runtime(
        ScriptedFramework({"r": tool_call("primary", q="x")}),
        tools=[Tool(name="primary", fn=broken)],
        settings=RuntimeSettings(tools=ToolPolicy(allowed={"primary"})),
    )
    record = _run(runtime, {"actions": ["r"]})
    assert record.status is RunStatus.SUCCEEDED
    assert record.results[0].output == {"error": "tool 'primary' failed (OSError)"}


def test_the_same_tool_call_repeated_is_stopped_as_a_loop() -> None:
    async def again(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        for _ in range(10):
            await tools.invoke("ping", {"n": 1})
        return "never"

    calls: list[dict[str, Any]] = []
    runtime = Runtime(
        ScriptedFramework({"a": again}),
        tools=[_counting("ping", calls)],
        settings=RuntimeSettings(tools=ToolPolicy(allowed={"ping"})),
    )
    record = _run(runtime, {"actions": ["a"]})
    assert record.status is RunStatus.LIMIT_EXCEEDED
    assert record.failure is not None
    assert record.failure.code == "ERR_LIMIT_LOOP"
    assert len(calls) == 2


async def _asks(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
    decision = tools.ask("interrupt", {"question": "go on?", "mail": "a@b.example"}, key="k-1")
    return decision.to_dict()


def test_a_frameworks_own_request_is_a_durable_approval_outside_the_allowlist() -> None:
    store = MemoryRunStore()
    runtime = Runtime(ScriptedFramework({"a": _asks}), store=store)  # no tool allowed
    first = _run(runtime, {"actions": ["a"]}, tenant="acme")
    assert first.status is RunStatus.PAUSED
    (pending,) = store.approvals("acme")
    assert pending.tool == "interrupt"
    assert pending.arguments["question"] == "go on?"
    assert "a@b.example" not in str(pending.arguments)  # recorded redacted
    store.decide("acme", pending.id, ApprovalStatus.REJECTED, note="not now")
    second = asyncio.run(runtime.resume(first.run_id, tenant="acme"))
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert second.results[0].output == {"type": "reject", "reason": "not now"}
    assert len(store.approvals("acme", open_only=False)) == 1
