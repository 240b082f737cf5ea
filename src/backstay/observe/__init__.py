"""Observability, the top floor: the readers of a batch (OpenTelemetry, Prometheus, the
report, health, the live view). The events, the bus, its sinks and the event log live in
``backstay.events``; their names are re-exported here, so ``from backstay.observe import
add_sink`` keeps working.
"""

from __future__ import annotations

from backstay.events import (
    EVENTS_FILE,
    AttemptFailed,
    AttemptStarted,
    CallSucceeded,
    Event,
    EventBus,
    EventLog,
    GaveUp,
    LoggingSink,
    RateLimited,
    RetryScheduled,
    Sink,
    add_sink,
    recording,
    remove_sink,
)

__all__ = [
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
