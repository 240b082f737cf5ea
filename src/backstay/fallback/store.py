"""``FallbackStore``: where a chain's breakers and cooldowns live, shared by its callers.

A store holds the candidates' circuit breakers (``breakers``: a ``BreakerStore``) and
their cooldowns: ``cool_down(name, until_s, reason)`` keeps the later of the stored and
the given end (Unix seconds), ``cooling_until(name)`` reads it (``None`` once passed or
never set). Times are Unix seconds so that processes sharing a store agree on them.

``MemoryFallbackStore`` keeps both in the process; ``SQLiteFallbackStore``
(``backstay.store.sqlite.fallback``) in a SQLite file (the engine's ``state.sqlite``). A Redis
store implements the same three members.
"""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

from backstay.breaker.memory import MemoryBreakerStore
from backstay.breaker.store import BreakerStore

__all__ = ["FallbackStore", "MemoryFallbackStore"]


@runtime_checkable
class FallbackStore(Protocol):
    """The shared state of a fallback chain; see the module docstring."""

    @property
    def breakers(self) -> BreakerStore:
        """Where the candidates' breaker records live."""
        ...

    def cool_down(self, name: str, *, until_s: float, reason: str) -> None:
        """Keep ``name`` out of selection until ``until_s`` (the later end wins)."""
        ...

    def cooling_until(self, name: str, *, now_s: float) -> float | None:
        """When ``name``'s cooldown ends, ``None`` when it is not cooling down at ``now_s``."""
        ...


class MemoryFallbackStore:
    """Breakers and cooldowns in process memory. Thread-safe."""

    __slots__ = ("_breakers", "_lock", "_until")

    def __init__(self) -> None:
        self._breakers = MemoryBreakerStore()
        self._until: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    @property
    def breakers(self) -> BreakerStore:
        return self._breakers

    def cool_down(self, name: str, *, until_s: float, reason: str) -> None:
        with self._lock:
            stored = self._until.get(name)
            if stored is None or stored[0] < until_s:
                self._until[name] = (until_s, reason)

    def cooling_until(self, name: str, *, now_s: float) -> float | None:
        stored = self._until.get(name)
        return None if stored is None or stored[0] <= now_s else stored[0]
