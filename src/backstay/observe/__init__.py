"""Observability: typed events and the sinks that receive them."""

from __future__ import annotations

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
    "AttemptFailed",
    "AttemptStarted",
    "CallSucceeded",
    "Event",
    "EventBus",
    "GaveUp",
    "LoggingSink",
    "RateLimited",
    "RetryScheduled",
    "Sink",
    "add_sink",
    "remove_sink",
]
