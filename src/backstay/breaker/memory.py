"""``MemoryBreakerStore``: breaker records in a dict, for one process.

Reads take no lock (a dict lookup of an immutable record is atomic); transitions hold a
lock for the few hundred nanoseconds ``fn`` runs. Locks are striped by name, so breakers
of different operations rarely wait for each other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final

from backstay.breaker.record import CLOSED_RECORD, BreakerRecord
from backstay.breaker.state import Step
from backstay.breaker.store import TransitionFn

__all__ = ["MemoryBreakerStore"]

_STRIPES: Final = 16


class MemoryBreakerStore:
    """Records in process memory; lost when the process ends. Thread-safe."""

    __slots__ = ("_locks", "_records", "load")

    shared: Final = False
    load: Callable[[str], BreakerRecord | None]
    """The current record of a name, or ``None``: the dict's own ``get``, with no Python
    frame in between (the closed path reads it twice per call)."""

    def __init__(self) -> None:
        self._records: dict[str, BreakerRecord] = {}
        self._locks = tuple(threading.Lock() for _ in range(_STRIPES))
        self.load = self._records.get

    def transition(self, name: str, fn: TransitionFn) -> Step:
        with self._locks[hash(name) % _STRIPES]:
            record = self._records.get(name, CLOSED_RECORD)
            step = fn(record)
            if step.record is not record:
                self._records[name] = step.record
        return step

    def names(self) -> list[str]:
        return sorted(self._records)
