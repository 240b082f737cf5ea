"""The narrow protocols the retry driver speaks to breakers, retry budgets and limiters.

Implementations hold their own clock and state; the driver never locks around the call.

* A ``CircuitBreakerLike`` hands out a ``Permit`` per attempt (or raises ``CircuitOpen``);
  the driver reports exactly one of ``success()``, ``failure(f)`` or ``release()`` on it.
  ``release()`` is for cancellation: the attempt neither succeeded nor failed.
* A ``RetryBudgetLike`` is told of every call and asked before every retry.
* A ``RateLimiterLike`` says how long to wait before an attempt, and learns from
  rate-limit failures (a 429 with a wait makes every caller of that bucket wait); a
  ``LimiterRegistryLike`` hands out one per provider (or configured name) and model.
* A ``ReservingLimiterLike`` is a limiter whose waits may end early. Its ``reservation``
  says how long to wait *as far as it knows now*, and with ``recheck_s`` when to ask
  again (``recheck``): a limiter that is still learning a provider's limits holds callers
  until it has heard from the provider. The driver sleeps ``min(wait_s, recheck_s)``,
  rechecks, and reports the end of every attempt made under a reservation with
  ``settle`` (answered, failed or cancelled alike). A recheck never lengthens a wait.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeGuard, TypeVar, runtime_checkable

from backstay.failure import Failure

__all__ = [
    "CircuitBreakerLike",
    "LimiterRegistryLike",
    "Permit",
    "RateLimiterLike",
    "ReservationLike",
    "ReservingLimiterLike",
    "RetryBudgetLike",
    "is_reserving",
]


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


class LimiterRegistryLike(Protocol):
    """A registry of limiters by ``provider`` (here: the matched name) and model."""

    def limiter_for(self, provider: str, model: str | None = None) -> RateLimiterLike: ...


@runtime_checkable
class ReservationLike(Protocol):
    """One attempt's place at a limiter, as of when it was made or last rechecked."""

    @property
    def wait_s(self) -> float:
        """Seconds to wait from then before the attempt (0: go now)."""
        ...

    @property
    def recheck_s(self) -> float | None:
        """``None``: ``wait_s`` is final. Otherwise the wait is provisional: ask again
        (``recheck``) after this many seconds, or after ``wait_s`` if that is shorter."""
        ...


R = TypeVar("R", bound=ReservationLike)


@runtime_checkable
class ReservingLimiterLike(RateLimiterLike, Protocol[R]):
    """A ``RateLimiterLike`` whose waits may end early (see the module docstring)."""

    def reservation(self, tokens: float = 1.0) -> R:
        """Reserve capacity for one attempt, or hold it until the limiter knows more."""
        ...

    def recheck(self, reservation: R) -> R:
        """The provisional ``reservation`` as of now: still held (with what is left of its
        wait, never more), or placed with a final wait."""
        ...

    def settle(self, reservation: R) -> None:
        """The attempt made under ``reservation`` ended, however it ended."""
        ...


# Whether a limiter type is a ``ReservingLimiterLike``, by type: a runtime-checkable
# protocol's isinstance walks the protocol's members on every call (tens of µs on 3.11),
# and the drivers ask it for every call they pace.
_RESERVING_TYPES: dict[type, bool] = {}


def is_reserving(limiter: object) -> TypeGuard[ReservingLimiterLike[Any]]:
    """``isinstance(limiter, ReservingLimiterLike)``, remembered per type (a limiter's
    methods are its class's)."""
    kind = type(limiter)
    found = _RESERVING_TYPES.get(kind)
    if found is None:
        found = _RESERVING_TYPES[kind] = isinstance(limiter, ReservingLimiterLike)
    return found
