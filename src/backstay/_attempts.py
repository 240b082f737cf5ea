"""The per-call state every retry driver shares: one object per call, nothing shared.

``CallState`` walks one logical call through its attempts: before each attempt it asks the
rate limiter how long to wait (rechecking a provisional wait until it is final, when the
limiter is a ``ReservingLimiterLike``) and the breaker for a permit; after a failure it classifies
the exception, reports it, asks the policy (``backstay.policy.decide``) and the retry
budget, and either returns the delay to sleep or re-raises the original exception with its
``Failure`` attached. The sync, async and block drivers in ``backstay.call`` only sleep
and call.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Final, NoReturn

from backstay.classify import classify
from backstay.clock import Clock, seeded_unit, unseeded_unit
from backstay.errors import DeadlineExceeded, RetryBudgetExhausted
from backstay.failure import Failure
from backstay.observe.events import (
    AttemptFailed,
    AttemptStarted,
    CallSucceeded,
    GaveUp,
    RateLimited,
    RetryScheduled,
)
from backstay.observe.sinks import BUS
from backstay.policy._delays import _last as _delays_last
from backstay.policy._delays import fixed_delays
from backstay.policy.protocols import (
    CircuitBreakerLike,
    Permit,
    RateLimiterLike,
    ReservationLike,
    ReservingLimiterLike,
    RetryBudgetLike,
)
from backstay.policy.retry import RetryPolicy, decide_delay

__all__ = ["CallState", "TestMode", "after_failure", "attach_failure", "test_mode"]

_NOTE_PREFIX = "backstay: "
# The shortest sleep between two rechecks, whatever a limiter asks: bounds the rechecks of
# one wait to its length divided by this.
MIN_RECHECK_S: Final = 0.001


# AttemptFailed and RetryScheduled share a level: whether a sink wants it is asked once.
_SAME_LEVEL: Final = AttemptFailed.level == RetryScheduled.level
_FAILED_LEVEL: Final = AttemptFailed.level
# Events below the failures' levels: often below every sink's, so checked inline first.
_STARTED_LEVEL: Final = AttemptStarted.level
_SUCCEEDED_LEVEL: Final = CallSucceeded.level


def _chunk(wait: float, recheck: float | None) -> float:
    """What to sleep of ``wait`` before asking again (all of it when it is final)."""
    return wait if recheck is None else min(wait, max(recheck, MIN_RECHECK_S))


@dataclasses.dataclass(slots=True)
class TestMode:
    """``backstay.testing.testing_mode`` switches this on: no delays, capped attempts."""

    active: bool = False
    max_attempts: int | None = None


test_mode = TestMode()


def attach_failure(exc: BaseException, failure: Failure) -> None:
    """Put ``failure`` on ``exc`` (``exc.failure`` and one note), without wrapping it."""
    with contextlib.suppress(AttributeError, TypeError):  # slotted or frozen exception types
        exc.failure = failure  # type: ignore[attr-defined]
    notes = getattr(exc, "__notes__", ())
    if not any(isinstance(n, str) and n.startswith(_NOTE_PREFIX) for n in notes):
        exc.add_note(f"{_NOTE_PREFIX}{failure.kind}/{failure.code}: {failure.message[:200]}")


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
        # A runtime-checkable protocol's isinstance is costly: only asked of a limiter.
        self._reserving: ReservingLimiterLike[Any] | None = (
            limiter if limiter is not None and isinstance(limiter, ReservingLimiterLike) else None
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


def after_failure(  # noqa: PLR0917 - the drivers' hot path: positional is cheapest
    policy: RetryPolicy,
    clock: Clock,
    operation: str | None,
    attempt: int,
    started: float,
    previous_delay: float | None,
    exc: Exception,
    failure: Failure,
    budget: RetryBudgetLike | None,
) -> float:
    """After attempt ``attempt`` failed with ``failure``: decide, report, and return the
    policy's delay before the next attempt (the caller sleeps none of it in testing mode).
    Re-raises ``exc`` with its ``Failure`` attached when the call gives up;
    ``RetryBudgetExhausted`` when the budget refuses the retry."""
    last = _delays_last[0]  # ``fixed_delays(policy)``, without the call for the policy asked last
    fixed = last[1] if last[0] is policy else fixed_delays(policy)
    if fixed is not None:
        draw = 0.0  # no jitter: the draw would not be used
    elif policy.seed is None:
        draw = unseeded_unit()
    else:
        draw = seeded_unit(policy.seed, policy.name, attempt)
    # Without a deadline the time taken matters only to the events: read the clock for them.
    elapsed = -1.0 if policy.deadline_s is None else clock.monotonic() - started
    delay, reason = decide_delay(policy, failure, attempt, elapsed, previous_delay, draw, fixed)
    retry = reason is None
    if retry and test_mode.active:
        cap = test_mode.max_attempts
        if cap is not None and attempt >= cap:
            retry, reason = False, "testing_mode_attempts"
    if retry and budget is None and BUS.silent():
        return delay  # the common case: nothing to report, nothing to spend
    # Each event is built only when a sink takes its level; one question per level.
    wants_failed = BUS.wants(_FAILED_LEVEL)
    if elapsed < 0.0 and (wants_failed or not retry):
        elapsed = clock.monotonic() - started
    if wants_failed:
        BUS.emit(
            AttemptFailed(
                operation=operation,
                policy=policy.name,
                attempt=attempt,
                failure=failure,
                delay_s=delay if retry else None,
                elapsed_s=elapsed,
            )
        )
    if not retry:
        _give_up(policy, operation, attempt, exc, failure, reason or "", elapsed)
    if budget is not None and not budget.try_spend_retry():
        attach_failure(exc, failure)
        raise RetryBudgetExhausted(budget.name) from exc
    slept = 0.0 if test_mode.active else delay
    if wants_failed if _SAME_LEVEL else BUS.wants(RetryScheduled.level):
        BUS.emit(
            RetryScheduled(
                operation=operation,
                policy=policy.name,
                attempt=attempt,
                delay_s=slept,
                failure=failure,
            )
        )
    if failure.retry_after_s and BUS.wants(RateLimited.level):
        BUS.emit(
            RateLimited(
                operation=operation,
                policy=policy.name,
                attempt=attempt,
                wait_s=slept,
                failure=failure,
            )
        )
    return delay


def _give_up(  # noqa: PLR0917
    policy: RetryPolicy,
    operation: str | None,
    attempt: int,
    exc: Exception,
    failure: Failure,
    reason: str,
    elapsed: float,
) -> NoReturn:
    attach_failure(exc, failure)
    if BUS.wants(GaveUp.level):
        BUS.emit(
            GaveUp(
                operation=operation,
                policy=policy.name,
                attempts=attempt,
                reason=reason,
                failure=failure,
                elapsed_s=elapsed,
            )
        )
    raise exc
