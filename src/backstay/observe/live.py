"""``LiveCounters``: a sink counting, in this process, what the state directory does not
record — waits imposed by rate limiters inside an attempt (``adapter.rate_limited``) —
and every event by name. ``backstay batch --serve-port`` adds them to ``/metrics``."""

from __future__ import annotations

import logging
import threading
from collections import Counter

from backstay.events import Event, RateLimited

__all__ = ["LiveCounters"]


class LiveCounters:
    """Counts events by name, and rate-limit waits (count and seconds) by reason:
    ``retry_after`` when the provider asked for the wait, ``rate_limiter`` otherwise."""

    min_level = logging.DEBUG

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: Counter[str] = Counter()
        self._waits: Counter[str] = Counter()
        self._wait_s: dict[str, float] = {}

    def accepts(self, level: int) -> bool:
        return level >= logging.INFO

    def emit(self, event: Event) -> None:
        with self._lock:
            self._events[event.name] += 1
            if isinstance(event, RateLimited) and not event.scheduled_retry:
                reason = "rate_limiter" if event.failure is None else "retry_after"
                self._waits[reason] += 1
                self._wait_s[reason] = self._wait_s.get(reason, 0.0) + event.wait_s

    def events(self) -> dict[str, int]:
        with self._lock:
            return dict(self._events)

    def waits(self) -> dict[str, tuple[int, float]]:
        """Reason → (how many waits, seconds waited)."""
        with self._lock:
            return {reason: (n, self._wait_s.get(reason, 0.0)) for reason, n in self._waits.items()}
