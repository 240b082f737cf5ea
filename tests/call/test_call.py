"""The retry drivers: call, acall, @retry and the block forms."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import time
from typing import Any

import httpx
import pytest

import backstay
from backstay import ConfigError, Failure, RetryBudgetExhausted, RetryPolicy
from backstay.call import _after_failure
from backstay.clock import seeded_unit
from backstay.events import EventBus
from backstay.policy import JitterMode
from backstay.testing import FakeClock, capture_events, testing_mode

EXACT = RetryPolicy(
    name="exact", max_attempts=4, initial_delay_s=1.0, max_delay_s=60.0, jitter_mode=JitterMode.NONE
)


class Flaky:
    """Fails with ``errors`` in order, then returns ``"ok"``; counts calls."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self, *args: object, **kwargs: object) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def test_a_transient_failure_is_retried_with_exact_delays() -> None:
    clock = FakeClock()
    fn = Flaky(ConnectionResetError(), ConnectionResetError())
    assert backstay.call(fn, policy=EXACT, clock=clock) == "ok"
    assert (fn.calls, clock.sleeps) == (3, [1.0, 2.0])


def test_arguments_are_passed_through() -> None:
    seen: list[object] = []

    def fn(a: int, *, b: str) -> str:
        seen.append((a, b))
        return b * a

    assert backstay.call(fn, 2, b="x") == "xx"
    assert seen == [(2, "x")]


def test_giving_up_raises_the_original_exception_with_its_failure() -> None:
    clock = FakeClock()
    error = ConnectionRefusedError(111, "refused")
    fn = Flaky(*[error] * 10)
    with pytest.raises(ConnectionRefusedError) as info:
        backstay.call(fn, policy=EXACT, clock=clock)
    assert info.value is error
    failure = info.value.failure  # type: ignore[attr-defined]
    assert isinstance(failure, Failure)
    assert failure.code == "ERR_CONNECTION_REFUSED"
    assert any("ERR_CONNECTION_REFUSED" in n for n in info.value.__notes__)
    assert fn.calls == 4


def test_a_non_retryable_failure_is_not_retried() -> None:
    request = httpx.Request("POST", "http://127.0.0.1/v1/messages")
    response = httpx.Response(
        401, request=request, json={"error": {"type": "authentication_error"}}
    )
    error = httpx.HTTPStatusError("401", request=request, response=response)
    fn = Flaky(error)
    with pytest.raises(httpx.HTTPStatusError):
        backstay.call(fn, policy=EXACT, clock=FakeClock())
    assert fn.calls == 1


def test_retry_after_is_waited_at_least() -> None:
    request = httpx.Request("POST", "http://127.0.0.1/v1/messages")
    response = httpx.Response(429, request=request, headers={"retry-after": "7"})
    clock = FakeClock()
    fn = Flaky(httpx.HTTPStatusError("429", request=request, response=response))
    backstay.call(fn, policy=EXACT, clock=clock)
    assert len(clock.sleeps) == 1
    assert 7.0 < clock.sleeps[0] <= 7.1


def test_a_retry_after_over_the_cap_gives_up_without_sleeping() -> None:
    request = httpx.Request("POST", "http://127.0.0.1/v1/messages")
    response = httpx.Response(429, request=request, headers={"retry-after": "3600"})
    clock = FakeClock()
    fn = Flaky(httpx.HTTPStatusError("429", request=request, response=response))
    with pytest.raises(httpx.HTTPStatusError):
        backstay.call(fn, policy=EXACT.derive(max_retry_after_s=60.0), clock=clock)
    assert clock.sleeps == []


def test_the_deadline_gives_up_before_a_sleep_that_cannot_fit() -> None:
    clock = FakeClock()
    fn = Flaky(*[TimeoutError()] * 10)
    with pytest.raises(TimeoutError):
        backstay.call(fn, policy=EXACT.derive(deadline_s=2.5), clock=clock)
    assert clock.sleeps == [1.0]  # 1 + 2 > 2.5: the second wait is not slept


def test_zero_delays_never_call_sleep() -> None:
    clock = FakeClock()
    policy = EXACT.derive(initial_delay_s=0.0, max_delay_s=0.0)
    backstay.call(Flaky(ConnectionResetError()), policy=policy, clock=clock)
    assert clock.sleeps == []


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt(), SystemExit(1)])
def test_base_exceptions_are_neither_retried_nor_classified(interrupt: BaseException) -> None:
    fn = Flaky(interrupt)
    with pytest.raises(type(interrupt)):
        backstay.call(fn, policy=EXACT, clock=FakeClock())
    assert fn.calls == 1
    assert not hasattr(interrupt, "failure")


def test_a_policy_name_is_looked_up() -> None:
    fn = Flaky(ConnectionResetError())
    with pytest.raises(ConnectionResetError):
        backstay.call(fn, policy="no_retry")
    assert fn.calls == 1


def test_an_unknown_policy_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'nope'"):
        backstay.call(lambda: 1, policy="nope")


def test_the_decorator_keeps_name_signature_and_behaviour() -> None:
    clock = FakeClock()
    fn = Flaky(ConnectionResetError())

    @backstay.retry(policy=EXACT, clock=clock)
    def fetch(url: str, *, timeout: float = 1.0) -> str:
        """Fetch it."""
        return fn(url, timeout)

    assert fetch.__name__ == "fetch"
    assert fetch.__doc__ == "Fetch it."
    assert list(inspect.signature(fetch).parameters) == ["url", "timeout"]
    assert fetch("u") == "ok"
    assert clock.sleeps == [1.0]


def test_the_bare_decorator_uses_the_standard_policy() -> None:
    @backstay.retry
    def one() -> int:
        return 1

    assert one() == 1


def test_the_block_form_retries_a_block() -> None:
    clock = FakeClock()
    fn = Flaky(ConnectionResetError(), ConnectionResetError())
    results = []
    for attempt in backstay.attempts(policy=EXACT, clock=clock):
        with attempt:
            results.append(fn())
    assert results == ["ok"]
    assert clock.sleeps == [1.0, 2.0]


def test_the_block_form_re_raises_when_it_gives_up() -> None:
    with pytest.raises(ConnectionResetError):  # noqa: PT012 - the loop is the form under test
        for attempt in backstay.attempts(policy="no_retry"):
            with attempt:
                raise ConnectionResetError


def test_events_are_emitted_for_every_step() -> None:
    clock = FakeClock()
    with capture_events() as events:
        backstay.call(Flaky(ConnectionResetError()), policy=EXACT, clock=clock, operation="llm")
    assert events.names == [
        "retry.attempt_started",
        "retry.attempt_failed",
        "task.retrying",
        "retry.attempt_started",
        "retry.succeeded",
    ]
    assert events[0].operation == "llm"


def test_a_rate_limit_wait_emits_adapter_rate_limited() -> None:
    clock = FakeClock()
    failure_exc = RateLimitedError()
    with capture_events() as events:
        backstay.call(Flaky(failure_exc), policy=EXACT, clock=clock)
    limited = events.named("adapter.rate_limited")
    assert len(limited) == 1


class RateLimitedError(Exception):
    failure = Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=2.0)


def test_giving_up_emits_gave_up_with_the_reason() -> None:
    with capture_events() as events, pytest.raises(ConnectionResetError):
        backstay.call(Flaky(ConnectionResetError()), policy="no_retry")
    (gave_up,) = events.named("retry.gave_up")
    assert gave_up.reason == "attempts_exhausted"  # type: ignore[attr-defined]


def test_testing_mode_skips_every_delay_and_caps_attempts() -> None:
    fn = Flaky(*[ConnectionResetError()] * 10)
    slow = EXACT.derive(initial_delay_s=30.0, max_attempts=10)
    started = time.monotonic()
    with testing_mode(attempts=2), pytest.raises(ConnectionResetError):
        backstay.call(fn, policy=slow)
    assert fn.calls == 2
    assert time.monotonic() - started < 5.0


class _Budget:
    name = "llm"

    def __init__(self, retries: int) -> None:
        self.retries = retries
        self.calls = 0

    def record_call(self) -> None:
        self.calls += 1

    def try_spend_retry(self) -> bool:
        self.retries -= 1
        return self.retries >= 0


def test_a_spent_retry_budget_fails_fast() -> None:
    budget = _Budget(retries=1)
    fn = Flaky(*[ConnectionResetError()] * 5)
    with pytest.raises(RetryBudgetExhausted) as info:
        backstay.call(fn, policy=EXACT, budget=budget, clock=FakeClock())
    assert fn.calls == 2
    assert isinstance(info.value.__cause__, ConnectionResetError)


class _Permit:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def success(self) -> None:
        self.log.append("success")

    def failure(self, failure: Failure) -> None:
        self.log.append(f"failure:{failure.kind}")

    def release(self) -> None:
        self.log.append("release")


class _Breaker:
    name = "b"

    def __init__(self) -> None:
        self.log: list[str] = []

    def acquire(self) -> _Permit:
        self.log.append("acquire")
        return _Permit(self.log)


def test_the_breaker_hears_one_outcome_per_attempt() -> None:
    breaker = _Breaker()
    backstay.call(Flaky(ConnectionResetError()), policy=EXACT, breaker=breaker, clock=FakeClock())
    assert breaker.log == ["acquire", "failure:network", "acquire", "success"]


def test_a_cancelled_attempt_releases_its_permit() -> None:
    breaker = _Breaker()
    with pytest.raises(KeyboardInterrupt):
        backstay.call(Flaky(KeyboardInterrupt()), breaker=breaker, clock=FakeClock())
    assert breaker.log == ["acquire", "release"]


class _Limiter:
    name = "openai"

    def __init__(self, waits: list[float]) -> None:
        self.waits = waits
        self.observed: list[str] = []

    def reserve(self, tokens: float = 1.0) -> float:
        return self.waits.pop(0) if self.waits else 0.0

    def observe(self, failure: Failure) -> None:
        self.observed.append(failure.code)


def test_the_limiter_wait_is_slept_before_the_attempt() -> None:
    clock = FakeClock()
    limiter = _Limiter([3.0])
    backstay.call(lambda: "ok", limiter=limiter, clock=clock)
    assert clock.sleeps == [3.0]


def test_the_limiter_learns_from_failures() -> None:
    limiter = _Limiter([])
    backstay.call(Flaky(ConnectionResetError()), policy=EXACT, limiter=limiter, clock=FakeClock())
    assert limiter.observed == ["ERR_CONNECTION_RESET"]


# ----------------------------------------------------------------------------------- async


def _arun(coro: Any) -> Any:
    return asyncio.run(coro)


class AFlaky(Flaky):
    async def run(self) -> str:
        return self()


def test_acall_retries_with_exact_delays() -> None:
    clock = FakeClock()
    fn = AFlaky(ConnectionResetError(), TimeoutError())
    assert _arun(backstay.acall(fn.run, policy=EXACT, clock=clock)) == "ok"
    assert clock.sleeps == [1.0, 2.0]


def test_the_async_decorator_keeps_it_a_coroutine_function() -> None:
    clock = FakeClock()
    fn = AFlaky(ConnectionResetError())

    @backstay.retry(policy=EXACT, clock=clock)
    async def fetch() -> str:
        return fn()

    assert inspect.iscoroutinefunction(fetch)
    assert _arun(fetch()) == "ok"


def test_the_async_block_form_retries() -> None:
    clock = FakeClock()
    fn = Flaky(ConnectionResetError())

    async def main() -> list[str]:
        out = []
        async for attempt in backstay.aattempts(policy=EXACT, clock=clock):
            with attempt:
                out.append(fn())
        return out

    assert _arun(main()) == ["ok"]
    assert clock.sleeps == [1.0]


def test_cancelling_during_a_backoff_sleep_returns_promptly() -> None:
    slow = EXACT.derive(initial_delay_s=30.0, max_delay_s=30.0)
    fn = AFlaky(*[ConnectionResetError()] * 5)

    async def main() -> float:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(backstay.acall(fn.run, policy=slow), 0.2)
        return time.monotonic() - started

    assert _arun(main()) < 2.0
    assert fn.calls == 1


def test_cancellation_is_never_retried() -> None:
    async def cancelled() -> None:
        raise asyncio.CancelledError

    calls: list[int] = []

    async def main() -> None:
        async def fn() -> None:
            calls.append(1)
            await cancelled()

        await backstay.acall(fn, policy=EXACT, clock=FakeClock())

    with pytest.raises(asyncio.CancelledError):
        _arun(main())
    assert calls == [1]


def test_the_deadline_bounds_a_running_async_attempt() -> None:
    async def hang() -> None:
        await asyncio.sleep(30)

    policy = EXACT.derive(deadline_s=0.2, max_attempts=3)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        _arun(backstay.acall(hang, policy=policy))
    assert time.monotonic() - started < 5.0


def test_many_concurrent_async_calls_each_keep_their_own_state() -> None:
    clock = FakeClock()
    flakies = [AFlaky(ConnectionResetError()) for _ in range(200)]

    async def main() -> list[str]:
        return await asyncio.gather(
            *(backstay.acall(f.run, policy=EXACT, clock=clock) for f in flakies)
        )

    assert _arun(main()) == ["ok"] * 200
    assert all(f.calls == 2 for f in flakies)


# -- with nothing listening: the drivers' short way for a plain failure --------------------


@pytest.fixture
def nothing_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bus with no sink, as in a program that configured no logging (under pytest the
    root logger has handlers, so the default bus is never silent here)."""
    bus = EventBus()
    monkeypatch.setattr(importlib.import_module("backstay.call"), "BUS", bus)
    monkeypatch.setattr(_after_failure, "BUS", bus)


@pytest.mark.usefixtures("nothing_listens")
@pytest.mark.parametrize("kwargs", [{}, {"key": "value"}], ids=["positional", "keywords"])
def test_plain_failures_wait_the_policy_s_delays_and_give_up_at_the_limit(
    kwargs: dict[str, str],
) -> None:
    clock = FakeClock()
    fn = Flaky(*(ConnectionResetError(f"reset {n}") for n in range(4)))
    with pytest.raises(ConnectionResetError) as raised:
        backstay.call(fn, "arg", policy=EXACT, clock=clock, **kwargs)  # type: ignore[arg-type]
    assert (fn.calls, clock.sleeps) == (4, [1.0, 2.0, 4.0])
    assert raised.value.failure.code == "ERR_CONNECTION_RESET"  # type: ignore[attr-defined]


@pytest.mark.usefixtures("nothing_listens")
def test_plain_failures_under_a_seeded_jitter_wait_what_decide_gives() -> None:
    policy = RetryPolicy(name="seeded", max_attempts=3, initial_delay_s=1.0, seed=11)
    reset = backstay.classify(ConnectionResetError("reset"))
    expected = [
        backstay.policy.decide(
            policy,
            reset,
            attempt=n,
            elapsed_s=0.0,
            previous_delay_s=None,
            draw=seeded_unit(11, "seeded", n),
        ).delay_s
        for n in (1, 2)
    ]
    clock = FakeClock()
    fn = Flaky(ConnectionResetError("reset"), ConnectionResetError("reset"))
    assert backstay.call(fn, policy=policy, clock=clock) == "ok"
    assert clock.sleeps == expected


@pytest.mark.usefixtures("nothing_listens")
def test_plain_failures_are_retried_the_same_way_by_acall() -> None:
    clock = FakeClock()
    fn = AFlaky(*(ConnectionResetError("reset") for _ in range(4)))
    with pytest.raises(ConnectionResetError):
        _arun(backstay.acall(fn.run, policy=EXACT, clock=clock))
    assert (fn.calls, clock.sleeps) == (4, [1.0, 2.0, 4.0])


@pytest.mark.usefixtures("nothing_listens")
def test_a_non_retryable_failure_among_plain_ones_still_stops_the_call() -> None:
    clock = FakeClock()
    fn = Flaky(ConnectionResetError("reset"), ValueError("bad input"))
    with pytest.raises(ValueError, match="bad input"):
        backstay.call(fn, policy=EXACT, clock=clock)
    assert (fn.calls, clock.sleeps) == (2, [1.0])
