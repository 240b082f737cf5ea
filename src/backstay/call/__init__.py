"""The retry drivers: ``call`` / ``acall`` and the ``@retry`` decorator — thin loops over
the pure policy core (the block forms ``attempts`` / ``aattempts`` are in ``_blocks``;
the per-call state in ``_state``, what follows a failure in ``_after_failure``; policy
names resolve in ``backstay.policy.registry``, whose ``use_registry`` and
``current_registry`` are re-exported here).

* The first attempt runs inline; all retry machinery is built only after a failure, so a
  call that succeeds pays for one ``try``.
* Only ``Exception`` is classified and retried. ``CancelledError``, ``KeyboardInterrupt``
  and ``SystemExit`` propagate at once, are never counted as failures, and release any
  breaker permit; a cancelled backoff sleep stops at once.
* A zero delay means no sleep call at all.
* A rate limiter's provisional wait (``ReservingLimiterLike``) is slept in the pieces it
  asks for, rechecked after each; a ``BaseException`` while waiting settles it.
* When the call gives up, the ORIGINAL exception propagates with its ``Failure`` attached
  (``exc.failure`` and a note); ``RetryBudgetExhausted`` / ``CircuitOpen`` are raised only
  when backstay itself refuses to call.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Final, ParamSpec, TypeVar, overload

from backstay.call._after_failure import general_after_failure, plain_delay, test_mode
from backstay.call._blocks import Attempt, aattempts, attempts
from backstay.call._state import CallState
from backstay.classify import classify
from backstay.classify._fast import recall_lone
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.events import BUS, AttemptStarted, CallSucceeded
from backstay.policy.protocols import (
    CircuitBreakerLike,
    RateLimiterLike,
    RetryBudgetLike,
)
from backstay.policy.registry import (
    PolicySpec,
    configured_breaker,
    current_registry,
    resolve_policy,
    use_registry,
)
from backstay.policy.retry import RetryPolicy

__all__ = [
    "Attempt",
    "aattempts",
    "acall",
    "attempts",
    "call",
    "current_registry",
    "retry",
    "use_registry",
]

P = ParamSpec("P")
T = TypeVar("T")

# The levels of the events an attempt starts with and a retried call ends with, read once:
# often below every sink's, so checked inline before the bus is asked.
_STARTED_LEVEL: Final = AttemptStarted.level
_SUCCEEDED_LEVEL: Final = CallSucceeded.level


def _started(pol: RetryPolicy, operation: str | None, attempt: int) -> bool:
    """Report the start of an attempt; whether anything took it."""
    if BUS.wants(_STARTED_LEVEL):
        BUS.emit(AttemptStarted(operation=operation, policy=pol.name, attempt=attempt))
        return True
    return False


def _succeeded(
    pol: RetryPolicy, operation: str | None, attempts: int, clk: Clock, started: float
) -> None:
    """Report a call's success (the clock is read only when a sink takes the event)."""
    if BUS.wants(_SUCCEEDED_LEVEL):
        elapsed = clk.monotonic() - started
        BUS.emit(
            CallSucceeded(
                operation=operation, policy=pol.name, attempts=attempts, elapsed_s=elapsed
            )
        )


def call(
    fn: Callable[..., T],
    *args: Any,
    policy: PolicySpec = None,
    operation: str | None = None,
    breaker: CircuitBreakerLike | None = None,
    budget: RetryBudgetLike | None = None,
    limiter: RateLimiterLike | None = None,
    clock: Clock | None = None,
    **kwargs: Any,
) -> T:
    """Call ``fn(*args, **kwargs)`` under ``policy`` (or the one for ``operation``)."""
    pol = policy if type(policy) is RetryPolicy else resolve_policy(policy, operation)
    return _run(fn, args, kwargs, pol, operation, breaker, budget, limiter, clock)


def _run(  # noqa: PLR0917 - the hot path: positional is the cheapest call
    fn: Callable[..., T],
    args: Any,
    kwargs: Any,
    pol: RetryPolicy,
    operation: str | None,
    breaker: CircuitBreakerLike | None,
    budget: RetryBudgetLike | None,
    limiter: RateLimiterLike | None,
    clock: Clock | None,
) -> T:
    clk = clock or SYSTEM_CLOCK
    if breaker is None and operation is not None:
        breaker = configured_breaker(operation)  # the configured circuit_breaker, if any
    if budget is not None or limiter is not None:
        return _run_state(fn, args, kwargs, pol, operation, breaker, budget, limiter, clk)
    # The common case, with no per-call object: the loop keeps its state in locals.
    started = clk.monotonic()
    attempt = 1
    previous: float | None = None
    # A call whose attempts are reported from its start reports its success even on the
    # first attempt; otherwise a success is reported only after retries.
    traced = False
    while True:
        permit = None if breaker is None else breaker.acquire()
        if BUS.min_level <= _STARTED_LEVEL:
            traced = _started(pol, operation, attempt) or traced
        try:
            result = fn(*args, **kwargs) if kwargs else fn(*args)
        except Exception as exc:
            failure = recall_lone(exc, None) or classify(exc)  # the commonest, first
            if permit is not None:
                permit.failure(failure)
            delay = plain_delay(pol, attempt, failure)  # ``after_failure`` without a budget
            if delay is None:
                delay = general_after_failure(
                    pol, clk, operation, attempt, started, previous, exc, failure, None
                )
        except BaseException:
            if permit is not None:
                permit.release()
            raise
        else:
            if permit is not None:
                permit.success()
            if (attempt > 1 or traced) and BUS.min_level <= _SUCCEEDED_LEVEL:
                _succeeded(pol, operation, attempt, clk, started)
            return result
        if delay > 0.0 and not test_mode.active:
            clk.sleep(delay)
        previous = delay
        attempt += 1


def _run_state(  # noqa: PLR0917 - positional, as ``_run``
    fn: Callable[..., T],
    args: Any,
    kwargs: Any,
    pol: RetryPolicy,
    operation: str | None,
    breaker: CircuitBreakerLike | None,
    budget: RetryBudgetLike | None,
    limiter: RateLimiterLike | None,
    clk: Clock,
) -> T:
    """``_run`` with a budget or a rate limiter: the loop over a ``CallState``."""
    state = CallState(
        pol, clk, operation=operation, breaker=breaker, budget=budget, limiter=limiter
    )
    while True:
        if state.limiter is not None:
            state.sleep_for_limiter()
        state.start_attempt()
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            delay = state.failed(exc)
        except BaseException:
            state.cancelled()
            raise
        else:
            state.succeeded()
            return result
        if delay > 0.0:
            clk.sleep(delay)


async def acall(
    fn: Callable[..., Awaitable[T]],
    *args: Any,
    policy: PolicySpec = None,
    operation: str | None = None,
    breaker: CircuitBreakerLike | None = None,
    budget: RetryBudgetLike | None = None,
    limiter: RateLimiterLike | None = None,
    clock: Clock | None = None,
    **kwargs: Any,
) -> T:
    """Await ``fn(*args, **kwargs)`` under ``policy``; the policy's deadline bounds each
    attempt (an attempt still running at the deadline is cancelled and counts as a
    timeout)."""
    pol = policy if type(policy) is RetryPolicy else resolve_policy(policy, operation)
    return await _arun(fn, args, kwargs, pol, operation, breaker, budget, limiter, clock)


async def _arun(  # noqa: PLR0917 - the hot path: positional is the cheapest call
    fn: Callable[..., Awaitable[T]],
    args: Any,
    kwargs: Any,
    pol: RetryPolicy,
    operation: str | None,
    breaker: CircuitBreakerLike | None,
    budget: RetryBudgetLike | None,
    limiter: RateLimiterLike | None,
    clock: Clock | None,
) -> T:
    clk = clock or SYSTEM_CLOCK
    if breaker is None and operation is not None:
        breaker = configured_breaker(operation)  # the configured circuit_breaker, if any
    if budget is not None or limiter is not None:
        return await _arun_state(fn, args, kwargs, pol, operation, breaker, budget, limiter, clk)
    deadline = pol.deadline_s
    started = clk.monotonic()
    attempt = 1
    previous: float | None = None
    # A call whose attempts are reported from its start reports its success even on the
    # first attempt; otherwise a success is reported only after retries.
    traced = False
    while True:
        permit = None if breaker is None else breaker.acquire()
        if BUS.min_level <= _STARTED_LEVEL:
            traced = _started(pol, operation, attempt) or traced
        try:
            if deadline is None:
                result = await (fn(*args, **kwargs) if kwargs else fn(*args))
            else:
                import asyncio  # noqa: PLC0415 - loaded by the running loop; import backstay is not

                async with asyncio.timeout(max(0.0, deadline - (clk.monotonic() - started))):
                    result = await fn(*args, **kwargs)
        except Exception as exc:
            failure = recall_lone(exc, None) or classify(exc)  # the commonest, first
            if permit is not None:
                permit.failure(failure)
            delay = plain_delay(pol, attempt, failure)  # ``after_failure`` without a budget
            if delay is None:
                delay = general_after_failure(
                    pol, clk, operation, attempt, started, previous, exc, failure, None
                )
        except BaseException:
            if permit is not None:
                permit.release()
            raise
        else:
            if permit is not None:
                permit.success()
            if (attempt > 1 or traced) and BUS.min_level <= _SUCCEEDED_LEVEL:
                _succeeded(pol, operation, attempt, clk, started)
            return result
        if delay > 0.0 and not test_mode.active:
            await clk.asleep(delay)
        previous = delay
        attempt += 1


async def _arun_state(  # noqa: PLR0917 - positional, as ``_arun``
    fn: Callable[..., Awaitable[T]],
    args: Any,
    kwargs: Any,
    pol: RetryPolicy,
    operation: str | None,
    breaker: CircuitBreakerLike | None,
    budget: RetryBudgetLike | None,
    limiter: RateLimiterLike | None,
    clk: Clock,
) -> T:
    """``_arun`` with a budget or a rate limiter: the loop over a ``CallState``."""
    deadline = pol.deadline_s
    state = CallState(
        pol, clk, operation=operation, breaker=breaker, budget=budget, limiter=limiter
    )
    while True:
        if state.limiter is not None:
            await state.asleep_for_limiter()
        state.start_attempt()
        try:
            if deadline is None:
                result = await fn(*args, **kwargs)
            else:
                remaining = max(0.0, deadline - state.elapsed())
                import asyncio  # noqa: PLC0415 - loaded by the running loop; import backstay is not

                async with asyncio.timeout(remaining):
                    result = await fn(*args, **kwargs)
        except Exception as exc:
            delay = state.failed(exc)
        except BaseException:
            state.cancelled()
            raise
        else:
            state.succeeded()
            return result
        if delay > 0.0:
            await clk.asleep(delay)


@overload
def retry(fn: Callable[P, T], /) -> Callable[P, T]: ...


@overload
def retry(
    *,
    policy: PolicySpec = None,
    operation: str | None = None,
    breaker: CircuitBreakerLike | None = None,
    budget: RetryBudgetLike | None = None,
    limiter: RateLimiterLike | None = None,
    clock: Clock | None = None,
) -> Callable[[Callable[P, T]], Callable[P, T]]: ...


def retry(
    fn: Callable[P, T] | None = None,
    /,
    *,
    policy: PolicySpec = None,
    operation: str | None = None,
    breaker: CircuitBreakerLike | None = None,
    budget: RetryBudgetLike | None = None,
    limiter: RateLimiterLike | None = None,
    clock: Clock | None = None,
) -> Callable[P, T] | Callable[[Callable[P, T]], Callable[P, T]]:
    """Decorate a sync or async function so every call runs under the policy.

    The policy is resolved once, at decoration; the wrapper keeps the signature.
    """
    pol = resolve_policy(policy, operation)

    def decorate(func: Callable[P, T]) -> Callable[P, T]:
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: P.args, **kwargs: P.kwargs) -> Any:
                return await _arun(
                    func, args, kwargs, pol, operation, breaker, budget, limiter, clock
                )

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(func)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            return _run(func, args, kwargs, pol, operation, breaker, budget, limiter, clock)

        return wrapper

    return decorate(fn) if fn is not None else decorate
