"""``capture_events()``: every event emitted inside a block, in order, for assertions."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from backstay.events import BUS, Event

__all__ = ["CapturedEvents", "capture_events"]


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
