"""Observability: typed events, the sinks that receive them, and the event log of a batch."""

from __future__ import annotations

from backstay.observe.eventlog import EVENTS_FILE, EventLog, recording
from backstay.observe.events import (
    AttemptFailed,
    AttemptStarted,
    CallSucceeded,
    Event,
    GaveUp,
    RateLimited,
    RetryScheduled,
)
from backstay.observe.sinks import EventBus, LoggingSink, Sink, add_sink, remove_sink

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
