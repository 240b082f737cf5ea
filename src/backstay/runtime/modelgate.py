"""``ModelGate``: the one way a framework's model calls reach the model.

``await gate.acall(fn, *args, usage_of=..., **kwargs)`` runs ``fn`` under backstay's retry
driver (``backstay.acall``: classification, rate limiter, circuit breaker, retry policy;
the framework's own retries must be off) and the run's hard limits: before every attempt
(the first and each retry) the limits are checked with the counts the attempt would
bring, and after it (failed attempts too) with the real usage ``usage_of(result)``
reports. A breach raises ``LimitExceeded``, and the run is halted: every later call of the
run raises it again, whatever the framework did with the first one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from backstay.adapters.usage import Usage
from backstay.call import acall, call
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.policy.protocols import CircuitBreakerLike, RateLimiterLike, RetryBudgetLike
from backstay.policy.registry import PolicySpec
from backstay.runtime.context import ExecutionContext
from backstay.runtime.errors import LimitExceeded, RunHalted
from backstay.runtime.events import model_operation

__all__ = ["ModelGate", "UsageOf"]

T = TypeVar("T")
UsageOf = Callable[[Any], Usage]

_ONE_CALL = Usage(api_calls=1)


class ModelGate:
    """The model calls of one run (built by the runtime; adapters use ``acall``/``call``)."""

    __slots__ = ("_budget", "_clock", "_ctx", "_limiter", "_policy", "breaker", "operation")

    def __init__(
        self,
        context: ExecutionContext,
        *,
        policy: PolicySpec = None,
        breaker: CircuitBreakerLike | None = None,
        limiter: RateLimiterLike | None = None,
        budget: RetryBudgetLike | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._ctx = context
        self._policy = policy
        self.breaker = breaker
        self._limiter = limiter
        self._budget = budget
        self._clock = clock
        self.operation = model_operation(context.trace_id)

    def _before(self, attempt: int) -> None:
        ctx = self._ctx
        ctx.check_halted()
        breach = ctx.tracker.check_before(self._clock.monotonic(), call="model", retry=attempt > 1)
        if breach is not None:
            raise ctx.halt(LimitExceeded(breach))

    def _after(self, usage: Usage, attempt: int) -> None:
        ctx = self._ctx
        breach = ctx.tracker.record_model_call(
            usage, retry=attempt > 1, now=self._clock.monotonic()
        )
        if breach is not None:
            raise ctx.halt(LimitExceeded(breach))

    async def acall(
        self,
        fn: Callable[..., Awaitable[T]],
        *args: Any,
        usage_of: UsageOf | None = None,
        **kwargs: Any,
    ) -> T:
        """Await ``fn(*args, **kwargs)`` under the run's policy and limits."""
        attempt = 0

        async def one() -> T:
            nonlocal attempt
            attempt += 1
            self._before(attempt)
            try:
                result = await fn(*args, **kwargs)
            except RunHalted:
                raise
            except Exception:
                self._after(_ONE_CALL, attempt)
                raise
            self._after(_usage(usage_of, result), attempt)
            return result

        return await acall(
            one,
            policy=self._policy,
            operation=self.operation,
            breaker=self.breaker,
            limiter=self._limiter,
            budget=self._budget,
            clock=self._clock,
        )

    def call(
        self, fn: Callable[..., T], *args: Any, usage_of: UsageOf | None = None, **kwargs: Any
    ) -> T:
        """``acall`` for a framework whose model calls are synchronous."""
        attempt = 0

        def one() -> T:
            nonlocal attempt
            attempt += 1
            self._before(attempt)
            try:
                result = fn(*args, **kwargs)
            except RunHalted:
                raise
            except Exception:
                self._after(_ONE_CALL, attempt)
                raise
            self._after(_usage(usage_of, result), attempt)
            return result

        return call(
            one,
            policy=self._policy,
            operation=self.operation,
            breaker=self.breaker,
            limiter=self._limiter,
            budget=self._budget,
            clock=self._clock,
        )


def _usage(usage_of: UsageOf | None, result: Any) -> Usage:
    if usage_of is None:
        return _ONE_CALL
    usage = usage_of(result)
    return usage if usage.api_calls else usage + _ONE_CALL
