"""Model calls through the gate: limits before and after each attempt, failed attempts
counted, halts that stay."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.runtime.support import ScriptedFramework

from backstay.adapters.usage import Usage
from backstay.breaker import CircuitBreaker
from backstay.policy.ratelimit import RateLimiter
from backstay.policy.retry import RetryPolicy
from backstay.runtime import (
    ExecutionContext,
    ExecutionLimits,
    RunStatus,
    Runtime,
    RuntimeSettings,
    Step,
    ToolGate,
)
from backstay.testing.fakeclock import FakeClock


def _run(script: Any, **settings: Any) -> Any:
    runtime = Runtime(
        ScriptedFramework({"a": script}), settings=RuntimeSettings(**settings), clock=FakeClock()
    )
    return asyncio.run(runtime.run({"actions": ["a"]}))


def test_a_sync_model_call_is_counted_with_its_usage() -> None:
    async def script(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        return ctx.model.call(lambda: "ok", usage_of=lambda _: Usage(output_tokens=9))

    record = _run(script)
    assert record.status is RunStatus.SUCCEEDED
    assert (record.usage.output_tokens, record.usage.api_calls) == (9, 1)


def test_a_model_call_past_the_limit_is_never_made() -> None:
    made: list[int] = []

    async def script(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        async def model(n: int) -> int:
            made.append(n)
            return n

        for n in range(5):
            await ctx.model.acall(model, n)
        return "never"

    record = _run(script, limits=ExecutionLimits(max_model_calls=2))
    assert made == [0, 1]
    assert record.status is RunStatus.LIMIT_EXCEEDED
    assert record.failure is not None
    assert record.failure.code == "ERR_LIMIT_MAX_TURNS"


def test_failed_attempts_count_against_the_retry_limit() -> None:
    attempts: list[int] = []

    async def script(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        async def model() -> str:
            attempts.append(1)
            raise ConnectionResetError("reset")

        return await ctx.model.acall(model)

    policy = RetryPolicy(name="many", max_attempts=10, initial_delay_s=0.1, jitter=0.0)
    record = _run(script, policy=policy, limits=ExecutionLimits(max_retries=2))
    assert len(attempts) == 3
    assert record.status is RunStatus.LIMIT_EXCEEDED
    assert record.failure is not None
    assert record.failure.code == "ERR_LIMIT_RETRIES"
    assert record.usage.api_calls == 3


def test_the_cost_cap_ends_the_run_after_the_call_that_reached_it() -> None:
    async def script(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        async def model() -> str:
            return "expensive"

        for _ in range(3):
            await ctx.model.acall(model, usage_of=lambda _: Usage(cost_usd=0.4))
        return "never"

    record = _run(script, limits=ExecutionLimits(max_cost_usd=1.0))
    assert record.status is RunStatus.LIMIT_EXCEEDED
    assert record.failure is not None
    assert record.failure.code == "ERR_LIMIT_BUDGET"
    assert record.usage.cost_usd is not None
    assert round(record.usage.cost_usd, 2) == 1.2


def _failing_runtime(**kwargs: Any) -> tuple[Runtime, list[int]]:
    calls: list[int] = []

    async def script(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        async def model() -> str:
            calls.append(1)
            raise ConnectionResetError("reset")

        return await ctx.model.acall(model)

    runtime = Runtime(
        ScriptedFramework({"a": script}),
        settings=RuntimeSettings(policy=RetryPolicy(name="one", max_attempts=1)),
        **kwargs,
    )
    return runtime, calls


def test_an_open_breaker_stops_model_calls_before_they_are_made() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("model", failure_threshold=2, open_duration_s=60, clock=clock)
    runtime, calls = _failing_runtime(breaker=breaker, clock=clock)
    first = asyncio.run(runtime.run({"actions": ["a"]}))
    second = asyncio.run(runtime.run({"actions": ["a"]}))
    third = asyncio.run(runtime.run({"actions": ["a"]}))
    assert len(calls) == 2
    assert [r.status for r in (first, second, third)] == [RunStatus.FAILED] * 3
    assert breaker.snapshot().state == "open"


def test_the_rate_limiter_paces_model_calls_on_the_runs_clock() -> None:
    clock = FakeClock()
    limiter = RateLimiter("model", requests_per_minute=60, burst_s=1, clock=clock)

    async def script(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        async def model() -> str:
            return "ok"

        for _ in range(3):
            await ctx.model.acall(model)
        return "done"

    runtime = Runtime(ScriptedFramework({"a": script}), limiter=limiter, clock=clock)
    record = asyncio.run(runtime.run({"actions": ["a"]}))
    assert record.status is RunStatus.SUCCEEDED
    assert sum(clock.sleeps) >= 1.9
