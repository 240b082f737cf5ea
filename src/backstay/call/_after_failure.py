"""What happens after an attempt fails, for every retry driver: the policy's decision, the
events that report it, the retry budget's say, and giving up (the original exception
re-raised with its ``Failure`` attached). ``CallState.failed`` and the drivers' loops in
``backstay.call`` that keep their state in locals both end here.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Final, NoReturn

from backstay.clock import Clock, seeded_unit, unseeded_unit
from backstay.errors import RetryBudgetExhausted
from backstay.events import BUS, AttemptFailed, GaveUp, RateLimited, RetryScheduled
from backstay.failure import Failure
from backstay.policy._delays import Entry as DelaysEntry
from backstay.policy._delays import _last as _delays_last
from backstay.policy._delays import fixed_delays
from backstay.policy._delays import table as delays_table
from backstay.policy.backoff import jittered
from backstay.policy.protocols import RetryBudgetLike
from backstay.policy.retry import RetryPolicy, decide_delay
from backstay.taxonomy import CODES, FailureKind

__all__ = [
    "PLAIN_CODES",
    "TestMode",
    "after_failure",
    "attach_failure",
    "general_after_failure",
    "plain_delay",
    "plain_jittered",
    "test_mode",
]

_NOTE_PREFIX: Final = "backstay: "
# AttemptFailed and RetryScheduled share a level: whether a sink wants it is asked once.
_SAME_LEVEL: Final = AttemptFailed.level == RetryScheduled.level
_FAILED_LEVEL: Final = AttemptFailed.level
# The codes of a plain failure (``plain_retries``): retryable, of a kind a policy's attempt
# limit applies to as it is (``unknown`` has its own limit; ``cancelled`` never retries).
PLAIN_CODES: Final = frozenset(
    code
    for code, info in CODES.items()
    if info.retryable and info.kind not in {FailureKind.UNKNOWN, FailureKind.CANCELLED}
)


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


def plain_delay(policy: RetryPolicy, attempt: int, failure: Failure) -> float | None:
    """The common case, for a call with no retry budget: a plain failure under a policy
    that decides it plainly (see ``plain_retries``) with nothing to report — the delay
    ``decide_delay`` gives, read from the policy's table; ``None`` for any other case
    (``general_after_failure`` then decides)."""
    table = _delays_last[0]  # the policy's table, without the call for the policy asked last
    if table[0] is not policy:
        table = delays_table(policy)
    if (
        attempt <= table[3]
        and failure.code in PLAIN_CODES
        and failure.retry_after_s is None
        and not test_mode.active
        and BUS.silent()
    ):
        fixed = table[1]
        return fixed[attempt - 1] if fixed is not None else plain_jittered(policy, table, attempt)
    return None


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
    if budget is None:
        delay = plain_delay(policy, attempt, failure)
        if delay is not None:
            return delay
    return general_after_failure(
        policy, clock, operation, attempt, started, previous_delay, exc, failure, budget
    )


def general_after_failure(  # noqa: PLR0917 - positional, as ``after_failure``
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
    """``after_failure`` once ``plain_delay`` has not answered: the policy's full decision
    and its events."""
    fixed = fixed_delays(policy)
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


def plain_jittered(policy: RetryPolicy, table: DelaysEntry, attempt: int) -> float:
    """``decide_delay``'s delay before retry ``attempt`` for a plain failure under a plain
    policy whose delays are drawn (``table`` is the policy's ``_delays.table``)."""
    seed = policy.seed
    draw = unseeded_unit() if seed is None else seeded_unit(seed, policy.name, attempt)
    base = table[2][attempt - 1]
    return jittered(policy.jitter_mode, base, attempt, policy.jitter, table[4], draw, seed)


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
