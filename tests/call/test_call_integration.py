"""The retry driver with the real retry budget and rate limiter (FakeClock)."""

from __future__ import annotations

import httpx
import pytest

import backstay
from backstay import RetryBudgetExhausted, RetryPolicy
from backstay.policy import JitterMode
from backstay.policy.budget import BudgetSettings, RetryBudget
from backstay.policy.ratelimit import RateLimiter
from backstay.testing import FakeClock, capture_events

EXACT = RetryPolicy(
    name="exact", max_attempts=4, initial_delay_s=1.0, max_delay_s=60.0, jitter_mode=JitterMode.NONE
)


def _rate_limited(wait_s: str) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(429, request=request, headers={"retry-after": wait_s})
    return httpx.HTTPStatusError("429", request=request, response=response)


def test_a_429_with_a_wait_makes_the_next_caller_of_the_limiter_wait_too() -> None:
    clock = FakeClock()
    limiter = RateLimiter("openai", clock=clock)
    errors = [_rate_limited("20")]

    def first() -> str:
        if errors:
            raise errors.pop()
        return "ok"

    assert backstay.call(first, policy=EXACT, limiter=limiter, clock=clock) == "ok"
    # the first caller waited the provider's 20 s (once, as a retry delay or a limiter wait)
    assert sum(clock.sleeps) >= 20.0
    clock.sleeps.clear()

    other_clock_start = clock.monotonic()
    limiter.observe(backstay.classify(_rate_limited("30")))
    with capture_events() as events:
        backstay.call(lambda: "ok", limiter=limiter, clock=clock)
    assert clock.sleeps
    assert clock.sleeps[0] >= 30.0 - 1e-6
    assert clock.monotonic() - other_clock_start >= 30.0 - 1e-6
    assert events.named("adapter.rate_limited")


def test_a_spent_real_budget_fails_fast_instead_of_retrying() -> None:
    clock = FakeClock()
    budget = RetryBudget(
        "llm", settings=BudgetSettings(ratio=0.0, min_retries_per_s=0.0), clock=clock
    )
    calls: list[int] = []

    def failing() -> None:
        calls.append(1)
        raise ConnectionResetError

    with pytest.raises(RetryBudgetExhausted):
        backstay.call(failing, policy=EXACT, budget=budget, clock=clock)
    assert calls == [1]


def test_a_budget_with_room_lets_the_retry_through() -> None:
    clock = FakeClock()
    budget = RetryBudget("llm", settings=BudgetSettings(ratio=1.0), clock=clock)
    errors = [ConnectionResetError()]

    def flaky() -> str:
        if errors:
            raise errors.pop()
        return "ok"

    assert backstay.call(flaky, policy=EXACT, budget=budget, clock=clock) == "ok"


def _overloaded() -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/messages")
    response = httpx.Response(529, request=request, json={"type": "error"})
    return httpx.HTTPStatusError("529", request=request, response=response)


def test_a_real_breaker_opens_then_fails_fast_then_probes() -> None:
    clock = FakeClock()
    breakers = backstay.BreakerRegistry(
        settings=backstay.BreakerSettings(failure_threshold=2, open_duration_s=30.0), clock=clock
    )
    guard = breakers.guard("anthropic/claude")
    calls: list[int] = []

    def overloaded() -> None:
        calls.append(1)
        raise _overloaded()

    no_retry = EXACT.derive(max_attempts=1)
    for _ in range(2):
        with pytest.raises(httpx.HTTPStatusError):
            backstay.call(overloaded, policy=no_retry, breaker=guard, clock=clock)
    with pytest.raises(backstay.CircuitOpen) as info:
        backstay.call(overloaded, policy=no_retry, breaker=guard, clock=clock)
    assert len(calls) == 2  # the open circuit never called the provider
    assert info.value.retry_after_s == pytest.approx(30.0)
    clock.advance(30.0)
    assert backstay.call(lambda: "ok", breaker=guard, clock=clock) == "ok"  # the probe closes it
    assert breakers.breaker_for("anthropic/claude").snapshot().state is backstay.CircuitState.CLOSED


def test_client_mistakes_do_not_open_the_circuit() -> None:
    clock = FakeClock()
    breaker = backstay.CircuitBreaker(
        "openai", settings=backstay.BreakerSettings(failure_threshold=1), clock=clock
    )
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    bad = httpx.Response(400, request=request, json={"error": {"code": "context_length_exceeded"}})

    def too_long() -> None:
        raise httpx.HTTPStatusError("400", request=request, response=bad)

    for _ in range(3):
        with pytest.raises(httpx.HTTPStatusError):
            backstay.call(too_long, breaker=breaker, clock=clock)
    assert breaker.snapshot().state is backstay.CircuitState.CLOSED
