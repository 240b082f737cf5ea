"""The block forms of the retry drivers: ``attempts`` / ``aattempts``, for a block that is
not a function (``for attempt in attempts(): with attempt: …``), over a ``CallState``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from backstay.call._state import CallState
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.policy.protocols import CircuitBreakerLike, RateLimiterLike, RetryBudgetLike
from backstay.policy.registry import PolicySpec, configured_breaker, resolve_policy

__all__ = ["Attempt", "aattempts", "attempts"]


class Attempt:
    """One attempt of a block (``with attempt:``): classifies what the block raises."""

    __slots__ = ("_state", "delay", "done", "number")

    def __init__(self, state: CallState) -> None:
        self._state = state
        self.number = state.attempt
        self.delay = 0.0
        self.done = False

    def __enter__(self) -> Attempt:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> bool:
        if exc is None:
            self._state.succeeded()
            self.done = True
            return False
        if not isinstance(exc, Exception):
            self._state.cancelled()
            return False
        self.delay = self._state.failed(exc)  # re-raises when the block gives up
        return True  # swallowed: the loop sleeps and runs the block again


def _block_state(
    *,
    policy: PolicySpec,
    operation: str | None,
    breaker: CircuitBreakerLike | None,
    budget: RetryBudgetLike | None,
    limiter: RateLimiterLike | None,
    clock: Clock | None,
) -> tuple[CallState, Clock]:
    clk = clock or SYSTEM_CLOCK
    pol = resolve_policy(policy, operation)
    if breaker is None and operation is not None:
        breaker = configured_breaker(operation)
    state = CallState(
        pol, clk, operation=operation, breaker=breaker, budget=budget, limiter=limiter
    )
    return state, clk


def attempts(
    *,
    policy: PolicySpec = None,
    operation: str | None = None,
    breaker: CircuitBreakerLike | None = None,
    budget: RetryBudgetLike | None = None,
    limiter: RateLimiterLike | None = None,
    clock: Clock | None = None,
) -> Iterator[Attempt]:
    """Retry a block that is not a function::

    for attempt in backstay.attempts(policy="standard"):
        with attempt:
            do_something()
    """
    state, clk = _block_state(
        policy=policy,
        operation=operation,
        breaker=breaker,
        budget=budget,
        limiter=limiter,
        clock=clock,
    )
    while True:
        state.sleep_for_limiter()
        state.start_attempt()
        attempt = Attempt(state)
        yield attempt
        if attempt.done:
            return
        if attempt.delay > 0.0:
            clk.sleep(attempt.delay)


async def aattempts(
    *,
    policy: PolicySpec = None,
    operation: str | None = None,
    breaker: CircuitBreakerLike | None = None,
    budget: RetryBudgetLike | None = None,
    limiter: RateLimiterLike | None = None,
    clock: Clock | None = None,
) -> AsyncIterator[Attempt]:
    """``attempts`` for async code: ``async for attempt in aattempts(): with attempt: …``."""
    state, clk = _block_state(
        policy=policy,
        operation=operation,
        breaker=breaker,
        budget=budget,
        limiter=limiter,
        clock=clock,
    )
    while True:
        await state.asleep_for_limiter()
        state.start_attempt()
        attempt = Attempt(state)
        yield attempt
        if attempt.done:
            return
        if attempt.delay > 0.0:
            await clk.asleep(attempt.delay)
