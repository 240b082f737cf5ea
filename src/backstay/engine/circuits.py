"""``CircuitGate``: the engine's circuit breakers, asked before every attempt.

One breaker per key, by default ``(adapter, model)`` (``breaker_key``): the name
``"anthropic-api/claude-haiku-4-5"``. The breakers keep their records in the state file
(the engine's ``BreakerStore``: ``state.sqlite`` or Redis), so every runner of the state
directory sees the same circuits and a resumed batch finds an open circuit still open.

* ``acquire(spec)`` gives a permit for one attempt, or raises ``CircuitOpen`` with the
  time until the next probe; the driver reports the attempt's end on the permit
  (success, the ``Failure``, or a release when the attempt never ended).
* Each change of a circuit is written to the circuit log (``SQLiteCircuitLog``) and
  emitted as the breaker's own event (``circuit.opened`` …) with ``operation`` set to
  the task whose attempt caused it.
* ``waited(...)`` writes a task's wait for an open circuit to the log, before it sleeps;
  ``admit(...)`` is the driver's loop over both: a permit, after waiting out an open
  circuit (each wait recorded and emitted as ``task.deferred`` first).

Which task caused a change is known because the breaker calls back synchronously inside
``acquire()`` and the permit's report: the gate names the task in a context variable
around exactly those calls.

A half-open probe is taken in the name ``"<owner> <operation_id>"`` (``probe_holder``:
the runner's lease owner and the task). When every probe is out, the gate gives back
(``CircuitBreaker.reclaim``) those whose holder is surely gone before it refuses: a probe
of this very task (the task's lease is this runner's now, so its earlier attempt is
over: the runner that took the probe was killed, or stopped when the store went away),
or one whose owner is a process of this host that no longer exists. Other probes are
left to end, or to lapse after ``probe_timeout_s``.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import datetime as _dt
from collections.abc import Callable, Iterator
from typing import Final

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.events import CircuitClosed, CircuitHalfOpened, CircuitOpened
from backstay.breaker.registry import BreakerKey, BreakerRegistry
from backstay.breaker.settings import BreakerSettings
from backstay.breaker.store import BreakerStore
from backstay.clock import Clock
from backstay.engine import _notify as notify
from backstay.engine.circuit_log import CircuitChange, CircuitEntry, CircuitLog
from backstay.engine.records import TaskRecord
from backstay.engine.task import TaskSpec
from backstay.errors import CircuitOpen
from backstay.events import BUS
from backstay.failure import Failure
from backstay.idempotency.owners import default_owner, holder_is_dead
from backstay.policy.protocols import Permit

__all__ = ["PROBES_OUT_WAIT_S", "BreakerKeyFn", "CircuitGate", "breaker_key", "probe_holder"]

BreakerKeyFn = Callable[[TaskSpec], BreakerKey]

_CHANGES: Final = {
    CircuitOpened: CircuitChange.OPENED,
    CircuitHalfOpened: CircuitChange.HALF_OPENED,
    CircuitClosed: CircuitChange.CLOSED,
}
# How long to wait when a half-open circuit has every probe out (no time to wait for is
# known): the probes' ends decide, so ask again soon.
PROBES_OUT_WAIT_S: Final = 1.0
# The shortest wait for an open circuit: a circuit due to half-open "now" is asked again
# after this, never in a tight loop.
_MIN_CIRCUIT_WAIT_S: Final = 0.05
# The task whose call is inside a breaker right now (set only around acquire and reports).
_acting: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "backstay_engine_circuit_task", default=None
)


def breaker_key(spec: TaskSpec) -> BreakerKey:
    """``(adapter, model)``: what fails together when a provider's model is down."""
    return (spec.adapter, spec.model)


def probe_holder(owner: str, operation_id: str) -> str:
    """The name a half-open probe of ``operation_id``'s attempt is taken in by the runner
    ``owner`` (an owner name has no space)."""
    return f"{owner} {operation_id}"


def _gone(holder: str, operation_id: str) -> bool:
    """Whether the probe ``holder`` took is surely over, asked for ``operation_id``."""
    owner, _, holder_operation = holder.partition(" ")
    return holder_operation == operation_id or holder_is_dead(owner)


@contextlib.contextmanager
def _acting_for(operation_id: str) -> Iterator[None]:
    token = _acting.set(operation_id)
    try:
        yield
    finally:
        _acting.reset(token)


class _TaskPermit:
    """A breaker's permit whose reports name the task they come from."""

    __slots__ = ("_inner", "_operation_id")

    def __init__(self, inner: Permit, operation_id: str) -> None:
        self._inner = inner
        self._operation_id = operation_id

    def success(self) -> None:
        with _acting_for(self._operation_id):
            self._inner.success()

    def failure(self, failure: Failure) -> None:
        with _acting_for(self._operation_id):
            self._inner.failure(failure)

    def release(self) -> None:
        with _acting_for(self._operation_id):
            self._inner.release()


def _reason(event: CircuitOpened | CircuitHalfOpened | CircuitClosed) -> str:
    if isinstance(event, CircuitOpened):
        if event.reason == "consecutive_failures":
            why = f"{event.consecutive_failures} consecutive failures"
        elif event.reason == "failure_rate":
            why = f"{event.window_failures} of the last {event.window_calls} calls failed"
        else:
            why = "a probe failed"
        return f"{why}; open for {event.open_duration_s:g} s"
    if isinstance(event, CircuitHalfOpened):
        return f"letting {event.max_probes} probe(s) through ({event.reason})"
    return f"closed ({event.reason})"


class CircuitGate:
    """The breakers of one engine over ``state_dir``; see the module docstring."""

    def __init__(
        self,
        settings: BreakerSettings,
        *,
        log: CircuitLog,
        store: BreakerStore,
        clock: Clock,
        key: BreakerKeyFn = breaker_key,
        owner: str | None = None,
    ) -> None:
        self.settings = settings
        # Names this runner in its probes: a lease owner's name (``default_owner()``).
        self.owner = default_owner() if owner is None else owner
        self.log = log
        self._clock = clock
        self._key = key
        self._store = store
        self.registry = BreakerRegistry(
            settings=settings, store=self._store, clock=clock, on_event=self._changed
        )

    def breaker(self, spec: TaskSpec) -> CircuitBreaker:
        """The breaker ``spec``'s attempts go through."""
        return self.registry.breaker_for(self._key(spec))

    def acquire(self, spec: TaskSpec) -> Permit:
        """A permit for one attempt of ``spec``; ``CircuitOpen`` while its circuit refuses."""
        return self._acquire(self.breaker(spec), spec.operation_id)

    def acquire_named(self, name: str, operation_id: str) -> Permit:
        """A permit of the breaker ``name`` (a fallback candidate's) for ``operation_id``."""
        return self._acquire(self.registry.breaker_for(name), operation_id)

    def _acquire(self, breaker: CircuitBreaker, operation_id: str) -> Permit:
        holder = probe_holder(self.owner, operation_id)
        with _acting_for(operation_id):
            try:
                permit = breaker.acquire(holder=holder)
            except CircuitOpen as refused:
                if refused.retry_after_s is not None:
                    raise
                gone = [h for h in breaker.probe_holders() if _gone(h, operation_id)]
                if not gone:
                    raise
                breaker.reclaim(gone)
                permit = breaker.acquire(holder=holder)
        return _TaskPermit(permit, operation_id)

    async def admit(
        self, spec: TaskSpec, record: TaskRecord, *, clock: Clock, policy: str
    ) -> Permit:
        """A permit for ``spec``'s next attempt, after waiting out an open circuit: each
        wait is recorded (``waited``) and emitted (``task.deferred``) before it is slept."""
        while True:
            try:
                return self.acquire(spec)
            except CircuitOpen as refused:
                after = refused.retry_after_s
                wait = max(PROBES_OUT_WAIT_S if after is None else after, _MIN_CIRCUIT_WAIT_S)
                self.waited(spec, breaker=refused.name, wait_s=wait, at=clock.now())
                notify.deferred(record, breaker=refused.name, wait_s=wait, policy=policy)
                await clock.asleep(wait)

    def waited(self, spec: TaskSpec, *, breaker: str, wait_s: float, at: _dt.datetime) -> None:
        """Record that ``spec``'s task waits ``wait_s`` for the open circuit ``breaker``."""
        self.log.add(
            CircuitEntry(
                breaker=breaker,
                change=CircuitChange.WAITED,
                at=at,
                operation_id=spec.operation_id,
                reason="the circuit is open: waiting, not attempting",
                wait_s=wait_s,
            )
        )

    def _changed(self, event: object) -> None:
        """The registry's callback: log the change, then emit it naming the task."""
        if not isinstance(event, CircuitOpened | CircuitHalfOpened | CircuitClosed):
            return
        operation_id = _acting.get()
        self.log.add(
            CircuitEntry(
                breaker=event.breaker,
                change=_CHANGES[type(event)],
                at=event.at,
                operation_id=operation_id,
                reason=_reason(event),
            )
        )
        if BUS.wants(event.level):
            BUS.emit(dataclasses.replace(event, operation=operation_id))

    def close(self) -> None:
        """Nothing to close: the breakers' store and the log belong to the engine."""
