"""The events a circuit breaker emits, one per change of state.

Frozen ``backstay.observe`` events with a stable dotted ``name``; a breaker hands them to
its ``on_event`` callback (by default, the event bus and its sinks) after the change is
stored, outside any lock. ``at`` is wall-clock time (UTC).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import logging
from typing import ClassVar

from backstay.breaker.record import CircuitState
from backstay.events import Event

__all__ = ["BreakerEvent", "CircuitClosed", "CircuitHalfOpened", "CircuitOpened"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CircuitOpened(Event):
    """The circuit ``breaker`` opened: callers fail fast for ``open_duration_s``.

    ``reason`` is ``consecutive_failures``, ``failure_rate`` or ``probe_failed``; the counts
    are those that tripped it (window counts are 0 when no rate window is kept).
    """

    name: ClassVar[str] = "circuit.opened"
    level: ClassVar[int] = logging.WARNING
    breaker: str
    at: _dt.datetime
    from_state: CircuitState
    reason: str
    consecutive_failures: int = 0
    window_calls: int = 0
    window_failures: int = 0
    open_duration_s: float


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CircuitHalfOpened(Event):
    """The circuit ``breaker`` admits up to ``max_probes`` probe calls.

    ``reason`` is ``open_duration_elapsed``, or ``probes_expired`` when a round of probes
    never reported back within ``probe_timeout_s`` and a new round began.
    """

    name: ClassVar[str] = "circuit.half_opened"
    breaker: str
    at: _dt.datetime
    reason: str
    max_probes: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CircuitClosed(Event):
    """The circuit ``breaker`` closed: ``probes_succeeded`` (with ``successes``) or ``reset``."""

    name: ClassVar[str] = "circuit.closed"
    breaker: str
    at: _dt.datetime
    from_state: CircuitState
    reason: str
    successes: int = 0


BreakerEvent = CircuitOpened | CircuitHalfOpened | CircuitClosed
