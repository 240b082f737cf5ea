from __future__ import annotations

import asyncio

from tests.runtime.support import ScriptedFramework, model_reply, tool_call

from backstay.runtime import Hooks, RunAborted, RunStatus, Runtime, RuntimeSettings, ToolPolicy


def test_each_hook_is_called_for_its_event_with_the_runs_trace_id() -> None:
    calls: list[tuple[str, str]] = []
    hooks = Hooks(
        on_plan_created=lambda e: calls.append(("plan", e.trace_id)),
        on_step_start=lambda e: calls.append(("start", e.step_id)),
        on_step_complete=lambda e: calls.append(("complete", e.status)),
    )
    runtime = Runtime(ScriptedFramework({"a": model_reply("x")}), hooks=hooks)
    record = asyncio.run(runtime.run({"actions": ["a"]}, trace_id="trace-1"))
    assert record.status is RunStatus.SUCCEEDED
    assert calls == [("plan", "trace-1"), ("start", "s0"), ("complete", "success")]


def test_on_abort_is_called_when_a_run_halts() -> None:
    aborted: list[RunAborted] = []
    runtime = Runtime(
        ScriptedFramework({"a": tool_call("nope")}),
        settings=RuntimeSettings(tools=ToolPolicy(allowed={"read"})),
    )
    asyncio.run(runtime.run({"actions": ["a"]}, hooks=Hooks(on_abort=aborted.append)))
    assert [e.code for e in aborted] == ["ERR_TOOL_NOT_ALLOWED"]


def test_hooks_of_one_run_see_nothing_of_another() -> None:
    seen: list[str] = []
    first = Runtime(
        ScriptedFramework({"a": model_reply("x")}),
        hooks=Hooks(on_trace=lambda e: seen.append("first")),
    )
    second = Runtime(ScriptedFramework({"a": model_reply("x")}))

    async def both() -> None:
        await asyncio.gather(first.run({"actions": ["a"]}), second.run({"actions": ["a"]}))

    asyncio.run(both())
    before = len(seen)
    asyncio.run(second.run({"actions": ["a"]}))
    assert before > 0
    assert len(seen) == before
