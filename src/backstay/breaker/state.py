"""The breaker's state machine as pure functions: (settings, record, now) → ``Step``.

No I/O, no clock, no locks: a store runs one of these inside its atomic section and keeps
the record it returns. A function that changes nothing returns the very record it was
given (``step.record is record``), so a store can skip the write. Functions may run more
than once for one call (an optimistic store retries on conflict) and must stay pure.

::

    CLOSED ──(failure_threshold consecutive, or rate ≥ threshold)──▶ OPEN
    OPEN ──(open_duration_s elapsed; the first caller takes a probe)──▶ HALF_OPEN
    HALF_OPEN ──(success_threshold probe successes)──▶ CLOSED
    HALF_OPEN ──(a counted probe failure)──▶ OPEN
    any ──(reset)──▶ CLOSED

A probe taken with a ``holder`` name is listed in ``probe_holders`` until it reports;
``reclaim`` gives back the probes of holders known to be gone (nothing else ever will).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Collection
from typing import NamedTuple

from backstay.breaker.record import BreakerRecord, CircuitState
from backstay.breaker.settings import BreakerSettings, WindowKind
from backstay.breaker.window import count_push, count_totals, time_push, time_totals

__all__ = [
    "Admission",
    "Step",
    "Transition",
    "TransitionReason",
    "acquire",
    "fail",
    "next_probe_at",
    "quiet_success",
    "reclaim",
    "release",
    "reset",
    "succeed",
    "totals",
]

_CLOSED = CircuitState.CLOSED
_OPEN = CircuitState.OPEN
_HALF_OPEN = CircuitState.HALF_OPEN


class TransitionReason(enum.StrEnum):
    """Why a circuit changed state (stable strings, carried by events)."""

    CONSECUTIVE_FAILURES = "consecutive_failures"
    FAILURE_RATE = "failure_rate"
    PROBE_FAILED = "probe_failed"
    OPEN_DURATION_ELAPSED = "open_duration_elapsed"
    PROBES_EXPIRED = "probes_expired"
    PROBES_SUCCEEDED = "probes_succeeded"
    RESET = "reset"


class Admission(enum.Enum):
    """What ``acquire`` decided; ``NONE`` for the steps that admit nobody."""

    NONE = "none"
    ADMIT = "admit"
    PROBE = "probe"
    REJECT = "reject"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Transition:
    """One change of state, with the counts that caused it."""

    from_state: CircuitState
    to_state: CircuitState
    reason: TransitionReason
    consecutive: int = 0
    calls: int = 0
    failures: int = 0
    successes: int = 0


class Step(NamedTuple):
    """The outcome of one pure step: the record to keep and what it decided."""

    record: BreakerRecord
    admission: Admission = Admission.NONE
    retry_after_s: float | None = None
    transition: Transition | None = None


def totals(settings: BreakerSettings, record: BreakerRecord, now: float) -> tuple[int, int]:
    """``(calls, failures)`` in the failure-rate window at ``now``."""
    if settings.window_kind is WindowKind.COUNT:
        return count_totals(record.window_bits, record.window_calls)
    return time_totals(record.bucket_at, record.buckets, now=now, bucket_s=settings.bucket_s)


def next_probe_at(settings: BreakerSettings, record: BreakerRecord) -> float | None:
    """When the next caller may probe: ``None`` when closed or all probes are out."""
    if record.state is _OPEN and record.opened_at is not None:
        return record.opened_at + settings.open_duration_s
    if record.state is _HALF_OPEN and record.probes < settings.half_open_max_probes:
        return record.half_opened_at
    return None


def _open(record: BreakerRecord, now: float) -> BreakerRecord:
    return BreakerRecord(state=_OPEN, epoch=record.epoch + 1, opened_at=now)


def _half_open(record: BreakerRecord, now: float, holder: str | None) -> BreakerRecord:
    return BreakerRecord(
        state=_HALF_OPEN,
        epoch=record.epoch + 1,
        opened_at=record.opened_at,
        half_opened_at=now,
        probes=1,
        probe_holders=() if holder is None else (holder,),
    )


def _with(holders: tuple[str, ...], holder: str | None) -> tuple[str, ...]:
    return holders if holder is None else (*holders, holder)


def _without(holders: tuple[str, ...], holder: str | None) -> tuple[str, ...]:
    if holder is None or holder not in holders:
        return holders
    at = holders.index(holder)
    return holders[:at] + holders[at + 1 :]


def acquire(
    settings: BreakerSettings, record: BreakerRecord, now: float, holder: str | None = None
) -> Step:
    """Admit a caller (closed), give it a probe (half-open), or reject it (open). A probe
    given to a named ``holder`` is listed in the record's ``probe_holders``."""
    state = record.state
    if state is _CLOSED:
        return Step(record, Admission.ADMIT)
    if state is _OPEN:
        opened_at = now if record.opened_at is None else record.opened_at
        if now < opened_at:  # a wall clock stepped back: never stay open past the step
            return Step(record._replace(opened_at=now), Admission.REJECT, settings.open_duration_s)
        wait = opened_at + settings.open_duration_s - now
        if wait > 0.0:
            return Step(record, Admission.REJECT, wait)
        reason = TransitionReason.OPEN_DURATION_ELAPSED
        change = Transition(from_state=_OPEN, to_state=_HALF_OPEN, reason=reason)
        return Step(_half_open(record, now, holder), Admission.PROBE, None, change)
    if record.probes < settings.half_open_max_probes:
        taken = record._replace(
            probes=record.probes + 1, probe_holders=_with(record.probe_holders, holder)
        )
        return Step(taken, Admission.PROBE)
    since = now if record.half_opened_at is None else record.half_opened_at
    if now < since:
        return Step(record._replace(half_opened_at=now), Admission.REJECT)
    if now - since >= settings.probe_timeout_s:
        reason = TransitionReason.PROBES_EXPIRED
        change = Transition(from_state=_HALF_OPEN, to_state=_HALF_OPEN, reason=reason)
        return Step(_half_open(record, now, holder), Admission.PROBE, None, change)
    return Step(record, Admission.REJECT)


def quiet_success(settings: BreakerSettings, record: BreakerRecord, epoch: int) -> bool:
    """True when ``succeed`` would keep ``record`` as it is (so no write is needed).

    Cheap on purpose: it is the closed path's only check after a success.
    """
    if record.epoch != epoch or record.state is _OPEN:
        return True
    if record.state is _HALF_OPEN or record.consecutive:
        return False
    if not settings.uses_window:
        return True
    return (
        settings.window_kind is WindowKind.COUNT
        and record.window_bits == 0
        and record.window_calls == settings.window_calls
    )


def _record_call(
    settings: BreakerSettings, record: BreakerRecord, *, failed: bool, now: float
) -> BreakerRecord:
    # Built positionally: this runs on every recorded call, and ``_replace`` costs twice as much.
    consecutive = record.consecutive + 1 if failed else 0
    bits, calls = record.window_bits, record.window_calls
    bucket_at, buckets = record.bucket_at, record.buckets
    if settings.uses_window:
        if settings.window_kind is WindowKind.COUNT:
            bits, calls = count_push(bits, calls, failed=failed, size=settings.window_calls)
        else:
            bucket_at, buckets = time_push(
                bucket_at, buckets, failed=failed, now=now, bucket_s=settings.bucket_s
            )
    return BreakerRecord(
        record.state,
        record.epoch,
        consecutive,
        bits,
        calls,
        bucket_at,
        buckets,
        record.opened_at,
        record.half_opened_at,
        record.probes,
        record.probe_successes,
        record.probe_holders,
    )


def succeed(
    settings: BreakerSettings,
    record: BreakerRecord,
    *,
    epoch: int,
    probe: bool,
    now: float,
    holder: str | None = None,
) -> Step:
    """A call admitted in ``epoch`` succeeded (a probe's, taken by ``holder``)."""
    if record.epoch != epoch or quiet_success(settings, record, epoch):
        return Step(record)
    if record.state is _CLOSED:
        return Step(_record_call(settings, record, failed=False, now=now))
    if not probe:
        return Step(record)
    successes = record.probe_successes + 1
    if successes < settings.success_threshold:
        holders = _without(record.probe_holders, holder)
        return Step(record._replace(probe_successes=successes, probe_holders=holders))
    change = Transition(
        from_state=_HALF_OPEN,
        to_state=_CLOSED,
        reason=TransitionReason.PROBES_SUCCEEDED,
        successes=successes,
    )
    return Step(BreakerRecord(state=_CLOSED, epoch=record.epoch + 1), transition=change)


def fail(
    settings: BreakerSettings, record: BreakerRecord, *, epoch: int, probe: bool, now: float
) -> Step:
    """A call admitted in ``epoch`` failed in a way that counts (the caller checked)."""
    if record.epoch != epoch:
        return Step(record)
    if record.state is _HALF_OPEN:
        if not probe:
            return Step(record)
        change = Transition(
            from_state=_HALF_OPEN,
            to_state=_OPEN,
            reason=TransitionReason.PROBE_FAILED,
            successes=record.probe_successes,
        )
        return Step(_open(record, now), transition=change)
    if record.state is not _CLOSED:
        return Step(record)
    updated = _record_call(settings, record, failed=True, now=now)
    calls, failures = totals(settings, updated, now) if settings.uses_window else (0, 0)
    reason: TransitionReason | None = None
    threshold = settings.failure_threshold
    rate = settings.failure_rate_threshold
    if threshold is not None and updated.consecutive >= threshold:
        reason = TransitionReason.CONSECUTIVE_FAILURES
    elif rate is not None and calls >= settings.minimum_calls and failures / calls >= rate:
        reason = TransitionReason.FAILURE_RATE
    if reason is None:
        return Step(updated)
    change = Transition(
        from_state=_CLOSED,
        to_state=_OPEN,
        reason=reason,
        consecutive=updated.consecutive,
        calls=calls,
        failures=failures,
    )
    return Step(_open(record, now), transition=change)


def release(record: BreakerRecord, *, epoch: int, probe: bool, holder: str | None = None) -> Step:
    """A call admitted in ``epoch`` (a probe's, taken by ``holder``) ended in neither
    success nor a counted failure."""
    if probe and record.state is _HALF_OPEN and record.epoch == epoch and record.probes > 0:
        holders = _without(record.probe_holders, holder)
        return Step(record._replace(probes=record.probes - 1, probe_holders=holders))
    return Step(record)


def reclaim(record: BreakerRecord, holders: Collection[str]) -> Step:
    """Give back the probes of the half-open round that ``holders`` took and never
    reported (their holders are gone); a record none of them holds a probe of is kept."""
    if record.state is not _HALF_OPEN:
        return Step(record)
    kept = tuple(h for h in record.probe_holders if h not in holders)
    gone = len(record.probe_holders) - len(kept)
    if not gone:
        return Step(record)
    return Step(record._replace(probes=max(record.probes - gone, 0), probe_holders=kept))


def reset(record: BreakerRecord) -> Step:
    """Back to a fresh closed circuit, whatever the state; in-flight permits go stale."""
    change = None
    if record.state is not _CLOSED:
        change = Transition(
            from_state=record.state, to_state=_CLOSED, reason=TransitionReason.RESET
        )
    return Step(BreakerRecord(state=_CLOSED, epoch=record.epoch + 1), transition=change)
