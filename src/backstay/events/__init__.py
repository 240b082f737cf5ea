"""The ground floor every emitter imports: the event base (``event``), the retry drivers'
events (``retry``), the bus and its sinks (``bus``), the event log of a batch (``log``) and
the trace context of the running attempt (``tracecontext``).

Events are frozen, past-tense facts with a stable ``name`` and a logging ``level``; the
bus hands each to the sinks that want its level, takes no lock to emit, and never lets a
failing sink break the call it observes. ``backstay.observe`` re-exports these names.
"""

from __future__ import annotations

from backstay.events.bus import BUS, EventBus, LoggingSink, Sink, add_sink, remove_sink
from backstay.events.event import Event
from backstay.events.log import EVENTS_FILE, EventLog, recording
from backstay.events.retry import (
    AttemptFailed,
    AttemptStarted,
    CallSucceeded,
    GaveUp,
    RateLimited,
    RetryScheduled,
)

__all__ = [
    "BUS",
    "EVENTS_FILE",
    "AttemptFailed",
    "AttemptStarted",
    "CallSucceeded",
    "Event",
    "EventBus",
    "EventLog",
    "GaveUp",
    "LoggingSink",
    "RateLimited",
    "RetryScheduled",
    "Sink",
    "add_sink",
    "recording",
    "remove_sink",
]
