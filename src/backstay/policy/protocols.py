"""The narrow protocols the retry driver speaks to breakers, retry budgets and limiters.

Implementations hold their own clock and state; the driver never locks around the call.

* A ``CircuitBreakerLike`` hands out a ``Permit`` per attempt (or raises ``CircuitOpen``);
  the driver reports exactly one of ``success()``, ``failure(f)`` or ``release()`` on it.
  ``release()`` is for cancellation: the attempt neither succeeded nor failed.
* A ``RetryBudgetLike`` is told of every call and asked before every retry.
* A ``RateLimiterLike`` says how long to wait before an attempt, and learns from
  rate-limit failures (a 429 with a wait makes every caller of that bucket wait).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from backstay.failure import Failure

__all__ = ["CircuitBreakerLike", "Permit", "RateLimiterLike", "RetryBudgetLike"]


@runtime_checkable
class Permit(Protocol):
    def success(self) -> None: ...

    def failure(self, failure: Failure) -> None: ...

    def release(self) -> None: ...


@runtime_checkable
class CircuitBreakerLike(Protocol):
    name: str

    def acquire(self) -> Permit:
        """A permit for one attempt; raises ``backstay.CircuitOpen`` when none is given."""
        ...


@runtime_checkable
class RetryBudgetLike(Protocol):
    name: str

    def record_call(self) -> None:
        """One logical call started (its first attempt)."""
        ...

    def try_spend_retry(self) -> bool:
        """Take one retry from the budget; ``False`` when it is spent."""
        ...


@runtime_checkable
class RateLimiterLike(Protocol):
    name: str

    def reserve(self, tokens: float = 1.0) -> float:
        """Reserve capacity for one attempt; the seconds to wait before making it (0: now)."""
        ...

    def observe(self, failure: Failure) -> None:
        """Learn from a failure: a rate limit with a wait blocks the bucket until then."""
        ...
