"""The retry drivers' events: an attempt started or failed, a retry scheduled, a wait
imposed by a rate limit, the call given up or succeeded (see ``backstay.events.event``
for what every event is)."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, ClassVar

from backstay.events.event import Event
from backstay.failure import Failure

__all__ = [
    "AttemptFailed",
    "AttemptStarted",
    "CallSucceeded",
    "GaveUp",
    "RateLimited",
    "RetryScheduled",
]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AttemptStarted(Event):
    name: ClassVar[str] = "retry.attempt_started"
    level: ClassVar[int] = logging.DEBUG
    attempt: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AttemptFailed(Event):
    """An attempt failed (logged at WARNING, as the retry policy framework asks)."""

    name: ClassVar[str] = "retry.attempt_failed"
    level: ClassVar[int] = logging.WARNING
    attempt: int
    failure: Failure
    delay_s: float | None
    elapsed_s: float


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RetryScheduled(Event):
    """The adapter reliability contract calls this ``task.retrying``."""

    name: ClassVar[str] = "task.retrying"
    attempt: int
    delay_s: float
    failure: Failure


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RateLimited(Event):
    """A wait imposed by a rate limit (the provider's or a client-side bucket). Emitted by
    the call drivers and by the engine when it schedules a task's retry after one;
    ``to_dict`` also gives ``wait_duration`` (the adapter reliability contract's name)."""

    name: ClassVar[str] = "adapter.rate_limited"
    attempt: int
    wait_s: float
    limiter: str | None = None
    failure: Failure | None = None
    # True when the engine emits it alongside ``task.retrying`` (which already is the wait).
    scheduled_retry: bool = False

    @property
    def wait_duration(self) -> float:
        """``wait_s``, under the adapter reliability contract's name."""
        return self.wait_s

    def to_dict(self) -> dict[str, Any]:
        out = Event.to_dict(self)
        out["wait_duration"] = self.wait_s
        return out


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GaveUp(Event):
    """The call's final failure (logged at ERROR, as the retry policy framework asks)."""

    name: ClassVar[str] = "retry.gave_up"
    level: ClassVar[int] = logging.ERROR
    attempts: int
    reason: str
    failure: Failure
    elapsed_s: float


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CallSucceeded(Event):
    """The call's final success (logged at INFO, as the retry policy framework asks)."""

    name: ClassVar[str] = "retry.succeeded"
    attempts: int
    elapsed_s: float
