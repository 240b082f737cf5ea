"""The runtime drives plan → execute → validate through its real gates."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest
from tests.runtime.support import ScriptedFramework, model_reply

from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.policy.retry import RetryPolicy
from backstay.runtime import (
    ExecutionContext,
    ExecutionLimits,
    Hooks,
    LimitExceeded,
    RunStatus,
    Runtime,
    RuntimeSettings,
    Step,
    StepResult,
    StepStatus,
    Tool,
    ToolGate,
    ToolPolicy,
)
from backstay.testing.fakeclock import FakeClock

SCHEMA = {"type": "object", "required": ["answer"]}


def _run(runtime: Runtime, input: Any, **kwargs: Any) -> Any:
    return asyncio.run(runtime.run(input, **kwargs))


def test_steps_run_in_dependency_order_and_their_usage_adds_up() -> None:
    framework = ScriptedFramework(
        {"a": model_reply("x", tokens=5), "b": model_reply("y", tokens=7)}
    )
    steps = [
        {"id": "second", "action": "b", "depends_on": ["first"]},
        {"id": "first", "action": "a"},
    ]
    record = _run(Runtime(framework), {"steps": steps})
    assert record.status is RunStatus.SUCCEEDED
    assert framework.executed == ["first", "second"]
    assert record.usage.input_tokens == 12
    assert record.usage.api_calls == 2


def test_a_token_limit_ends_the_run_with_the_results_so_far() -> None:
    framework = ScriptedFramework({"m": model_reply("x", tokens=60)})
    settings = RuntimeSettings(limits=ExecutionLimits(max_tokens=100))
    record = _run(Runtime(framework, settings=settings), {"actions": ["m", "m", "m"]})
    assert record.status is RunStatus.LIMIT_EXCEEDED
    assert record.failure is not None
    assert record.failure.code == "ERR_LIMIT_TOKENS"
    assert [r.output for r in record.results] == ["x"]


def test_a_halt_the_framework_swallows_still_ends_the_run() -> None:
    async def swallow(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        for _ in range(3):
            with contextlib.suppress(LimitExceeded):  # a framework that swallows tool errors
                await tools.invoke("t", {"n": 1})
        return "claims success"

    framework = ScriptedFramework({"s": swallow})
    calls: list[int] = []
    settings = RuntimeSettings(
        limits=ExecutionLimits(max_tool_calls=1), tools=ToolPolicy(allowed={"t"})
    )
    tool = Tool(name="t", fn=lambda n: calls.append(n) or "ok")
    record = _run(Runtime(framework, tools=[tool], settings=settings), {"actions": ["s"]})
    assert record.status is RunStatus.LIMIT_EXCEEDED
    assert calls == [1]
    assert record.results == ()


def test_an_invalid_output_is_run_again_with_the_validation_feedback() -> None:
    seen: list[str | None] = []

    async def answer(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        seen.append(ctx.feedback)
        return {"answer": "ok"} if ctx.feedback else {"wrong": 1}

    settings = RuntimeSettings(schema=SCHEMA)
    record = _run(Runtime(ScriptedFramework({"a": answer}), settings=settings), {"actions": ["a"]})
    assert record.status is RunStatus.SUCCEEDED
    assert seen == [None, "answer: is required"]


def test_an_output_that_never_validates_fails_after_the_corrections() -> None:
    async def answer(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        return {"wrong": 1}

    settings = RuntimeSettings(schema=SCHEMA, max_corrections=1)
    record = _run(Runtime(ScriptedFramework({"a": answer}), settings=settings), {"actions": ["a"]})
    assert record.status is RunStatus.FAILED
    assert record.failure is not None
    assert record.failure.code == "ERR_OUTPUT_INVALID"


def test_a_framework_error_moves_the_step_to_the_fallback_adapter() -> None:
    async def broken(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        raise RuntimeError("internal framework state: SYSTEM PROMPT is secret")

    fallback = ScriptedFramework({"a": model_reply("from the fallback")})
    record = _run(Runtime(ScriptedFramework({"a": broken}), fallback=fallback), {"actions": ["a"]})
    assert record.status is RunStatus.SUCCEEDED
    assert record.results[0].output == "from the fallback"


def test_a_framework_error_without_a_fallback_fails_the_step() -> None:
    async def broken(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        raise ConnectionResetError("reset")

    record = _run(Runtime(ScriptedFramework({"a": broken})), {"actions": ["a"]})
    assert record.status is RunStatus.FAILED
    assert record.failure is not None
    assert record.failure.kind == "network"


def test_a_failed_plan_fails_the_run() -> None:
    framework = ScriptedFramework({}, fail_plan=ValueError("no plan"))
    record = _run(Runtime(framework), {"actions": []})
    assert record.status is RunStatus.FAILED


def test_a_step_that_hangs_is_cut_at_the_wall_time() -> None:
    async def hang(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        await asyncio.sleep(30)

    settings = RuntimeSettings(limits=ExecutionLimits(wall_time_s=0.2))
    record = _run(Runtime(ScriptedFramework({"h": hang}), settings=settings), {"actions": ["h"]})
    assert record.status is RunStatus.LIMIT_EXCEEDED
    assert record.failure is not None
    assert record.failure.code == "ERR_LIMIT_WALL_TIME"


def test_a_step_timeout_fails_the_step() -> None:
    async def hang(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        await asyncio.sleep(30)

    steps = [{"id": "h", "action": "h", "timeout_s": 0.1}]
    record = _run(Runtime(ScriptedFramework({"h": hang})), {"steps": steps})
    assert record.status is RunStatus.FAILED
    assert record.failure is not None
    assert record.failure.code == "ERR_TIMEOUT"


def test_a_blocked_step_pauses_the_run() -> None:
    async def block(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        failure = Failure(code="ERR_APPROVAL_REQUIRED", message="waiting")
        return StepResult(step_id=step.id, status=StepStatus.BLOCKED, error=failure)

    record = _run(Runtime(ScriptedFramework({"b": block})), {"actions": ["b"]})
    assert record.status is RunStatus.PAUSED


def test_recorded_outputs_state_and_input_are_redacted() -> None:
    async def leak(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        ctx.state["contact"] = "mail ann@example.org"
        return {"card": "4111 1111 1111 1111"}

    runtime = Runtime(ScriptedFramework({"l": leak}))
    record = _run(runtime, {"actions": ["l"], "note": "call +44 20 7946 0958"})
    stored = runtime.store.load_run("default", record.run_id)
    assert stored is not None
    assert stored.results[0].output == {"card": "[CARD]"}
    assert stored.state == {"contact": "mail [EMAIL]"}
    assert stored.input["note"] == "call [PHONE]"


def test_on_retry_gets_each_retried_model_call_with_its_attempt_and_backoff() -> None:
    failures = iter([ConnectionResetError("reset")])

    async def flaky(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        async def model() -> str:
            exc = next(failures, None)
            if exc is not None:
                raise exc
            return "ok"

        return await ctx.model.acall(model)

    retries: list[tuple[int, float, str]] = []
    hooks = Hooks(
        on_retry=lambda attempt, delay, failure: retries.append((attempt, delay, failure.kind))
    )
    policy = RetryPolicy(name="fast", initial_delay_s=0.5, jitter=0.0)
    settings = RuntimeSettings(policy=policy)
    runtime = Runtime(
        ScriptedFramework({"f": flaky}), settings=settings, hooks=hooks, clock=FakeClock()
    )
    record = _run(runtime, {"actions": ["f"]})
    assert record.status is RunStatus.SUCCEEDED
    assert retries == [(1, 0.5, "network")]
    assert record.usage.api_calls == 2


def test_a_run_id_is_never_run_twice() -> None:
    runtime = Runtime(ScriptedFramework({"a": model_reply("x")}))
    _run(runtime, {"actions": ["a"]}, run_id="r1")
    with pytest.raises(ConfigError, match="resume it"):
        _run(runtime, {"actions": ["a"]}, run_id="r1")


def test_a_framework_error_is_recorded_without_its_message() -> None:
    async def broken(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        raise RuntimeError("SYSTEM PROMPT: you are a secret internal agent")

    record = _run(Runtime(ScriptedFramework({"a": broken})), {"actions": ["a"]})
    assert record.status is RunStatus.FAILED
    assert record.failure is not None
    assert record.failure.message == "the scripted adapter raised RuntimeError (unknown)"
    assert "SYSTEM PROMPT" not in json.dumps(record.to_dict())
