"""The per-call state every retry driver shares: one object per call, nothing shared.

``CallState`` walks one logical call through its attempts: before each attempt it asks the
rate limiter how long to wait (rechecking a provisional wait until it is final, when the
limiter is a ``ReservingLimiterLike``) and the breaker for a permit; after a failure it
classifies the exception, tells the breaker and the limiter, and leaves the rest to
``backstay.call._after_failure.after_failure`` (the policy's decision, the events, the retry
budget, giving up). The drivers in ``backstay.call`` use it when a call has a budget or a
rate limiter, and for the block forms; a plain call keeps its state in locals.
"""

from __future__ import annotations

from typing import Any, Final

from backstay.call._after_failure import after_failure, test_mode
from backstay.classify import classify
from backstay.clock import Clock
from backstay.errors import DeadlineExceeded
from backstay.events import BUS, AttemptStarted, CallSucceeded, RateLimited
from backstay.policy.protocols import (
    CircuitBreakerLike,
    Permit,
    RateLimiterLike,
    ReservationLike,
    ReservingLimiterLike,
    RetryBudgetLike,
    is_reserving,
)
from backstay.policy.retry import RetryPolicy

__all__ = ["CallState"]

# The shortest sleep between two rechecks, whatever a limiter asks: bounds the rechecks of
# one wait to its length divided by this.
MIN_RECHECK_S: Final = 0.001


# Events below the failures' levels: often below every sink's, so checked inline first.
_STARTED_LEVEL: Final = AttemptStarted.level
_SUCCEEDED_LEVEL: Final = CallSucceeded.level


def _chunk(wait: float, recheck: float | None) -> float:
    """What to sleep of ``wait`` before asking again (all of it when it is final)."""
    return wait if recheck is None else min(wait, max(recheck, MIN_RECHECK_S))


class CallState:
    """One logical call: attempt counter, timing, the open permit, the previous delay."""

    __slots__ = (
        "_hold_due",
        "_reserving",
        "attempt",
        "breaker",
        "budget",
        "clock",
        "limiter",
        "operation",
        "permit",
        "policy",
        "previous_delay",
        "reservation",
        "started",
    )

    def __init__(
        self,
        policy: RetryPolicy,
        clock: Clock,
        *,
        operation: str | None,
        breaker: CircuitBreakerLike | None,
        budget: RetryBudgetLike | None,
        limiter: RateLimiterLike | None,
    ) -> None:
        self.policy = policy
        self.clock = clock
        self.operation = operation
        self.breaker = breaker
        self.budget = budget
        self.limiter = limiter
        self.attempt = 0
        self.permit: Permit | None = None
        self.previous_delay: float | None = None
        self.started = clock.monotonic()
        self.reservation: ReservationLike | None = None
        # A runtime-checkable protocol's isinstance is costly: asked once per limiter type.
        self._reserving: ReservingLimiterLike[Any] | None = (
            limiter if limiter is not None and is_reserving(limiter) else None
        )
        self._hold_due = 0.0
        if budget is not None:
            budget.record_call()

    def elapsed(self) -> float:
        return self.clock.monotonic() - self.started

    def limiter_wait(self) -> float:
        """Seconds to sleep before the next attempt because of the rate limiter (0: none).
        After sleeping them, ask ``limiter_recheck`` for the next sleep until it says 0.
        ``DeadlineExceeded`` when the wait would outlast the policy's deadline."""
        limiter = self.limiter
        if limiter is None:
            return 0.0
        reserving = self._reserving
        recheck: float | None = None
        if reserving is None:
            wait = limiter.reserve()
        else:
            self._settle()
            reservation = reserving.reservation()
            self.reservation = reservation
            wait, recheck = reservation.wait_s, reservation.recheck_s
        if wait <= 0.0:
            return 0.0
        self._hold_due = self.clock.monotonic() + wait
        sleep = _chunk(wait, recheck)
        self._check_deadline(sleep, wait)
        if BUS.wants(RateLimited.level):
            BUS.emit(
                RateLimited(
                    operation=self.operation,
                    policy=self.policy.name,
                    attempt=self.attempt + 1,
                    wait_s=wait,
                    limiter=limiter.name,
                )
            )
        return sleep if not test_mode.active else 0.0

    def sleep_for_limiter(self) -> None:
        """Sleep what the rate limiter asks before an attempt, rechecking provisional
        waits; a ``BaseException`` while waiting settles the reservation."""
        wait = self.limiter_wait()
        try:
            while wait > 0.0:
                self.clock.sleep(wait)
                wait = self.limiter_recheck()
        except BaseException:
            self.cancelled()
            raise

    async def asleep_for_limiter(self) -> None:
        """``sleep_for_limiter`` for the async drivers."""
        wait = self.limiter_wait()
        try:
            while wait > 0.0:
                await self.clock.asleep(wait)
                wait = self.limiter_recheck()
        except BaseException:
            self.cancelled()
            raise

    def limiter_recheck(self) -> float:
        """After a sleep ``limiter_wait`` (or this) asked for: the next sleep, 0 when the
        attempt may go. A provisional wait is rechecked with the limiter; it never runs past
        the first wait's end, whatever the limiter says."""
        reserving, reservation = self._reserving, self.reservation
        if reserving is None or reservation is None or reservation.recheck_s is None:
            return 0.0
        if test_mode.active:
            return 0.0
        reservation = reserving.recheck(reservation)
        self.reservation = reservation
        wait, recheck = reservation.wait_s, reservation.recheck_s
        if wait <= 0.0:
            return 0.0
        if recheck is not None:
            left = self._hold_due - self.clock.monotonic()
            if left <= 0.0:
                return 0.0
            wait = min(wait, left)
        sleep = _chunk(wait, recheck)
        self._check_deadline(sleep, wait)
        return sleep

    def _check_deadline(self, sleep: float, wait: float) -> None:
        deadline = self.policy.deadline_s
        if deadline is not None and self.elapsed() + sleep > deadline:
            self._settle()
            raise DeadlineExceeded(deadline, needed_s=wait)

    def _settle(self) -> None:
        """Tell a reserving limiter that the attempt of the current reservation ended."""
        reservation = self.reservation
        if reservation is not None and self._reserving is not None:
            self.reservation = None
            self._reserving.settle(reservation)

    def start_attempt(self) -> None:
        """Count the attempt and take a breaker permit (``CircuitOpen`` propagates)."""
        self.attempt += 1
        if self.breaker is not None:
            self.permit = self.breaker.acquire()
        if BUS.min_level <= _STARTED_LEVEL and BUS.wants(_STARTED_LEVEL):
            BUS.emit(
                AttemptStarted(
                    operation=self.operation, policy=self.policy.name, attempt=self.attempt
                )
            )

    def succeeded(self) -> None:
        if self.reservation is not None:
            self._settle()
        if self.permit is not None:
            self.permit.success()
            self.permit = None
        if BUS.min_level <= _SUCCEEDED_LEVEL and BUS.wants(_SUCCEEDED_LEVEL):
            BUS.emit(
                CallSucceeded(
                    operation=self.operation,
                    policy=self.policy.name,
                    attempts=self.attempt,
                    elapsed_s=self.elapsed(),
                )
            )

    def cancelled(self) -> None:
        """A ``BaseException`` that is not an ``Exception``: neither success nor failure."""
        self._settle()
        if self.permit is not None:
            self.permit.release()
            self.permit = None

    def failed(self, exc: Exception) -> float:
        """The delay before the next attempt; re-raises ``exc`` when the call gives up."""
        failure = classify(exc)
        if self.permit is not None:
            self.permit.failure(failure)
            self.permit = None
        if self.limiter is not None:
            self.limiter.observe(failure)
        if self.reservation is not None:
            self._settle()
        delay = after_failure(
            self.policy,
            self.clock,
            self.operation,
            self.attempt,
            self.started,
            self.previous_delay,
            exc,
            failure,
            self.budget,
        )
        self.previous_delay = delay
        return 0.0 if test_mode.active else delay
