"""``FakeClock``: a manual clock for tests; sleeping on it returns at once and is recorded."""

from __future__ import annotations

import datetime as _dt
import threading

__all__ = ["FakeClock"]


class FakeClock:
    """A clock that only moves when told to (``advance``) or when something sleeps on it.

    ``sleeps`` records every sleep in order. Thread-safe.
    """

    def __init__(self, *, start: float = 1000.0, wall: _dt.datetime | None = None) -> None:
        self._lock = threading.Lock()
        self._now = float(start)
        self._wall0 = wall or _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
        self._start = float(start)
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        with self._lock:
            return self._now

    def now(self) -> _dt.datetime:
        with self._lock:
            return self._wall0 + _dt.timedelta(seconds=self._now - self._start)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("FakeClock cannot go back in time")
        with self._lock:
            self._now += seconds

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self._now += max(0.0, seconds)

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)
