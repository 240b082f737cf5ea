"""Test helpers for backstay's users and for backstay itself (public API).

* ``FakeClock``: a manual clock; ``sleep`` advances it instantly and records the delays.
* ``testing_mode()``: every retry delay becomes zero (no sleep call at all) and attempts
  are capped, so test suites exercise retry paths instantly.
* ``capture_events()``: collect every event emitted inside the block.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import threading
from collections.abc import Iterator

from backstay._attempts import test_mode
from backstay.observe.events import Event
from backstay.observe.sinks import BUS

__all__ = ["CapturedEvents", "FakeClock", "capture_events", "testing_mode"]

DEFAULT_TEST_ATTEMPTS = 3


@contextlib.contextmanager
def testing_mode(*, attempts: int | None = DEFAULT_TEST_ATTEMPTS) -> Iterator[None]:
    """Inside the block every retry delay is zero (no sleep at all) and calls make at most
    ``attempts`` attempts (``None``: as the policy says). Not for concurrent test threads
    that expect different modes: the switch is process-wide, like the clock it replaces."""
    previous = (test_mode.active, test_mode.max_attempts)
    test_mode.active, test_mode.max_attempts = True, attempts
    try:
        yield
    finally:
        test_mode.active, test_mode.max_attempts = previous


# pytest collects module-level names starting with "test"; this one is a helper.
testing_mode.__test__ = False  # type: ignore[attr-defined]


class CapturedEvents(list[Event]):
    """The events emitted inside ``capture_events()``, in order."""

    min_level: int = logging.DEBUG

    def accepts(self, level: int) -> bool:
        return True

    def emit(self, event: Event) -> None:
        self.append(event)

    def named(self, name: str) -> list[Event]:
        return [e for e in self if e.name == name]

    @property
    def names(self) -> list[str]:
        return [e.name for e in self]


@contextlib.contextmanager
def capture_events() -> Iterator[CapturedEvents]:
    """Collect every event (all levels) emitted while the block runs."""
    sink = CapturedEvents()
    BUS.add(sink)
    try:
        yield sink
    finally:
        BUS.remove(sink)


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
