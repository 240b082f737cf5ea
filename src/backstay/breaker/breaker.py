"""``CircuitBreaker``: fail fast while an operation is down, probe it carefully back up.

The breaker is a thin driver over the pure state machine (``backstay.breaker.state``):
it reads the record, decides, and only when something must change runs the decision again
inside the store's atomic ``transition``. It never holds a lock while the protected call
runs: ``acquire()`` hands out a permit and returns; the caller reports exactly one of
``success()``, ``failure(f)`` or ``release()`` on it afterwards.

The closed path allocates nothing: every caller admitted while the circuit is closed gets
the same permit object while the record stays the same (it carries the record it was
admitted under), and a success on a healthy circuit is a lock-free read that finds nothing
to change. With a shared store (Redis, SQLite) that read is the one made at ``acquire``: a
success that would change nothing in the record its call was admitted under is recorded
there and then, with no second read (the call's outcome is placed at its admission, which
its calls overlapping in time make as valid an order as any); one that changes something
is decided again on the stored record in the store's ``transition``.

A caller may name itself when it acquires (``holder``): a half-open probe it takes is then
listed under that name until it reports, and ``reclaim`` gives back the probes of holders
the caller knows are gone (a process that died holding one), so the circuit need not
wait ``probe_timeout_s`` for them.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, Final

from backstay.breaker.events import BreakerEvent, CircuitClosed, CircuitHalfOpened, CircuitOpened
from backstay.breaker.memory import MemoryBreakerStore
from backstay.breaker.record import CLOSED_RECORD, BreakerRecord, CircuitState
from backstay.breaker.settings import BreakerSettings
from backstay.breaker.snapshot import BreakerSnapshot
from backstay.breaker.state import (
    Admission,
    Step,
    Transition,
    acquire,
    fail,
    quiet_success,
    reclaim,
    release,
    reset,
    succeed,
)
from backstay.breaker.store import BreakerStore, TransitionFn
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.errors import CircuitOpen, ConfigError
from backstay.events import BUS
from backstay.failure import Failure
from backstay.policy.protocols import Permit

__all__ = ["CircuitBreaker", "EventCallback"]

EventCallback = Callable[[object], None]

DEFAULT_SETTINGS: Final = BreakerSettings()
_CLOSED: Final = CircuitState.CLOSED
# The record of the permit a breaker starts with: no record is ever this one.
_NO_RECORD: Final = CLOSED_RECORD._replace(epoch=-1)
_log = logging.getLogger("backstay.breaker")
_EVENT_LEVEL: Final = {
    CircuitState.OPEN: CircuitOpened.level,
    CircuitState.HALF_OPEN: CircuitHalfOpened.level,
    CircuitState.CLOSED: CircuitClosed.level,
}


class _ClosedPermit:
    """The permit of every caller admitted under one record of a closed circuit."""

    __slots__ = ("_breaker", "epoch", "record")

    def __init__(self, breaker: CircuitBreaker, record: BreakerRecord) -> None:
        self._breaker = breaker
        self.record = record
        self.epoch = record.epoch

    def success(self) -> None:
        self._breaker._succeeded(self.epoch, probe=False, seen=self.record)

    def failure(self, failure: Failure) -> None:
        self._breaker._failed(self.epoch, failure, probe=False)

    def release(self) -> None:
        """A cancelled call in a closed circuit counts as nothing: nothing to do."""


class _ProbePermit:
    """One half-open probe slot. Only its first report counts; later ones are ignored."""

    __slots__ = ("_breaker", "_once", "epoch", "holder")

    def __init__(self, breaker: CircuitBreaker, epoch: int, holder: str | None) -> None:
        self._breaker = breaker
        self.epoch = epoch
        self.holder = holder
        self._once = threading.Lock()

    def success(self) -> None:
        if self._once.acquire(blocking=False):
            self._breaker._succeeded(self.epoch, probe=True, holder=self.holder)

    def failure(self, failure: Failure) -> None:
        if self._once.acquire(blocking=False):
            self._breaker._failed(self.epoch, failure, probe=True, holder=self.holder)

    def release(self) -> None:
        if self._once.acquire(blocking=False):
            self._breaker._released(self.epoch, self.holder)


class CircuitBreaker:
    """A circuit breaker named ``name``; its state lives in ``store`` under that name.

    Breakers with the same name and store share one circuit (across processes, with a
    shared store). Settings come as a ``BreakerSettings`` or as its fields directly
    (``CircuitBreaker("openai", failure_threshold=3, open_duration_s=10)``), which then
    change ``settings``. ``on_event`` receives a ``CircuitOpened``, ``CircuitHalfOpened``
    or ``CircuitClosed`` after every change of state (by default they go to the event bus);
    an exception it raises is logged, never passed to the caller.
    """

    __slots__ = ("_clock", "_now", "_on_event", "_permit", "_store", "name", "settings")

    def __init__(
        self,
        name: str,
        *,
        settings: BreakerSettings = DEFAULT_SETTINGS,
        store: BreakerStore | None = None,
        clock: Clock | None = None,
        on_event: EventCallback | None = None,
        **overrides: Any,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"must be a non-empty string, got {name!r}", where="breaker.name")
        if not isinstance(settings, BreakerSettings):
            raise ConfigError(
                f"must be a BreakerSettings, got {type(settings).__name__}",
                where="breaker.settings",
            )
        if overrides:
            known = {f.name for f in dataclasses.fields(BreakerSettings)}
            unknown = sorted(set(overrides) - known)
            if unknown:
                raise ConfigError(
                    f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}",
                    where="breaker",
                )
            settings = settings.derive(**overrides)
        self.name = name
        self.settings = settings
        self._clock: Clock = SYSTEM_CLOCK if clock is None else clock
        self._store: BreakerStore = MemoryBreakerStore() if store is None else store
        self._now: Callable[[], float] = self._unix if self._store.shared else self._clock.monotonic
        self._on_event = on_event
        self._permit = _ClosedPermit(self, _NO_RECORD)

    # -- the permit protocol -------------------------------------------------------------

    def acquire(self, *, holder: str | None = None) -> Permit:
        """A permit for one call; raises ``CircuitOpen`` when the circuit refuses it.

        ``CircuitOpen.retry_after_s`` is the time until the next probe, or ``None`` when
        the circuit is half-open and every probe is out. A probe given to a named
        ``holder`` is listed under that name until it reports (see ``reclaim``).
        """
        record = self._store.load(self.name) or CLOSED_RECORD
        if record.state is _CLOSED:
            permit = self._permit
            if permit.record is not record and permit.record != record:
                permit = self._permit = _ClosedPermit(self, record)
            return permit
        settings = self.settings
        step = acquire(settings, record, self._now(), holder)
        if step.record is not record:
            step = self._apply(lambda r: acquire(settings, r, self._now(), holder))
        if step.admission is Admission.PROBE:
            return _ProbePermit(self, step.record.epoch, holder)
        if step.admission is Admission.ADMIT:  # closed again by the time the store was asked
            self._permit = _ClosedPermit(self, step.record)
            return self._permit
        raise CircuitOpen(self.name, retry_after_s=step.retry_after_s)

    def _succeeded(
        self,
        epoch: int,
        *,
        probe: bool,
        holder: str | None = None,
        seen: BreakerRecord | None = None,
    ) -> None:
        """``seen``: the record the call was admitted under (see the module docstring)."""
        settings = self.settings
        record = seen if seen is not None and self._store.shared else None
        if record is None:
            record = self._store.load(self.name) or CLOSED_RECORD
        if quiet_success(settings, record, epoch):
            return
        self._apply(
            lambda r: succeed(settings, r, epoch=epoch, probe=probe, now=self._now(), holder=holder)
        )

    def _failed(
        self, epoch: int, failure: Failure, *, probe: bool, holder: str | None = None
    ) -> None:
        settings = self.settings
        if failure.kind not in settings.counted_kinds:
            if probe:
                self._released(epoch, holder)
            return
        # Late news from a period that is over is skipped: here by a lock-free read; a
        # shared store's ``transition`` reads the record anyway, and ``fail`` skips it there.
        if not self._store.shared:
            record = self._store.load(self.name) or CLOSED_RECORD
            if record.epoch != epoch:
                return
        self._apply(lambda r: fail(settings, r, epoch=epoch, probe=probe, now=self._now()))

    def _released(self, epoch: int, holder: str | None = None) -> None:
        self._apply(lambda r: release(r, epoch=epoch, probe=True, holder=holder))

    # -- queries and control -------------------------------------------------------------

    @property
    def state(self) -> CircuitState:
        """The stored state (an open circuit turns half-open when the next caller comes)."""
        return self._record().state

    def snapshot(self) -> BreakerSnapshot:
        """State, counts, when it opened and when the next probe may go."""
        return BreakerSnapshot.of(
            self.name, self.settings, self._record(), now=self._now(), to_wall=self._to_wall
        )

    def reset(self) -> None:
        """Close the circuit and forget every count; permits given before are ignored."""
        self._apply(reset)

    def probe_holders(self) -> tuple[str, ...]:
        """The named holders of the half-open probes still out (see ``acquire``)."""
        record = self._record()
        return record.probe_holders if record.state is CircuitState.HALF_OPEN else ()

    def reclaim(self, holders: Iterable[str]) -> None:
        """Give back the probes ``holders`` took and never reported, because the caller
        knows they are gone (their process died). A probe so given back lets the next
        caller probe now, not after ``probe_timeout_s``."""
        gone = frozenset(holders)
        if gone.intersection(self.probe_holders()):
            self._apply(lambda r: reclaim(r, gone))

    # -- plumbing ------------------------------------------------------------------------

    def _record(self) -> BreakerRecord:
        return self._store.load(self.name) or CLOSED_RECORD

    def _unix(self) -> float:
        return self._clock.now().timestamp()

    def _to_wall(self, at: float) -> _dt.datetime:
        if self._store.shared:
            return _dt.datetime.fromtimestamp(at, _dt.UTC)
        return self._clock.now() - _dt.timedelta(seconds=self._clock.monotonic() - at)

    def _apply(self, fn: TransitionFn) -> Step:
        step = self._store.transition(self.name, fn)
        if step.transition is not None:
            self._emit(step.transition)
        return step

    def _emit(self, change: Transition) -> None:
        callback = self._on_event
        if callback is None and not BUS.wants(_EVENT_LEVEL[change.to_state]):
            return
        event = self._event(change)
        try:
            if callback is None:
                BUS.emit(event)
            else:
                callback(event)
        except Exception:  # noqa: BLE001 - a failing sink must not fail the call it observes
            _log.exception("breaker %r: on_event failed for %s", self.name, event.name)

    def _event(self, change: Transition) -> BreakerEvent:
        at = self._clock.now()
        if change.to_state is CircuitState.OPEN:
            return CircuitOpened(
                breaker=self.name,
                at=at,
                from_state=change.from_state,
                reason=change.reason.value,
                consecutive_failures=change.consecutive,
                window_calls=change.calls,
                window_failures=change.failures,
                open_duration_s=self.settings.open_duration_s,
            )
        if change.to_state is CircuitState.HALF_OPEN:
            return CircuitHalfOpened(
                breaker=self.name,
                at=at,
                reason=change.reason.value,
                max_probes=self.settings.half_open_max_probes,
            )
        return CircuitClosed(
            breaker=self.name,
            at=at,
            from_state=change.from_state,
            reason=change.reason.value,
            successes=change.successes,
        )

    def __repr__(self) -> str:
        return f"<CircuitBreaker {self.name!r} {self.state.value}>"
