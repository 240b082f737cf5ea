"""``BreakerRegistry``: one breaker per operation key, plus one global breaker.

Keys name what fails together, typically ``(provider, model)``; a tuple key becomes the
breaker name ``"provider/model"``. Every keyed breaker shares the registry's settings,
store, clock and event callback; the global breaker (named ``GLOBAL_NAME``) may have
settings of its own. ``guard(key)`` gives the pair (global, keyed) as one breaker.
"""

from __future__ import annotations

import threading
from typing import Final

from backstay.breaker.breaker import CircuitBreaker, EventCallback
from backstay.breaker.group import BreakerGroup
from backstay.breaker.memory import MemoryBreakerStore
from backstay.breaker.settings import BreakerSettings
from backstay.breaker.snapshot import BreakerSnapshot
from backstay.breaker.store import BreakerStore
from backstay.clock import Clock
from backstay.errors import ConfigError

__all__ = ["GLOBAL_NAME", "BreakerKey", "BreakerRegistry"]

GLOBAL_NAME: Final = "*"

BreakerKey = str | tuple[str, ...]


def _key_name(key: BreakerKey) -> str:
    """The breaker name of ``key``: the string itself, or a tuple's parts joined by ``/``."""
    parts = (key,) if isinstance(key, str) else key
    if not isinstance(parts, tuple) or not parts:
        raise ConfigError(f"must be a string or a tuple of strings, got {key!r}", where="key")
    for part in parts:
        if not isinstance(part, str) or not part:
            raise ConfigError(f"parts must be non-empty strings, got {key!r}", where="key")
    name = "/".join(parts)
    if name == GLOBAL_NAME:
        raise ConfigError(f"{GLOBAL_NAME!r} is the global breaker's name", where="key")
    return name


class BreakerRegistry:
    """Creates breakers on first use, one per key, all from the same settings. Thread-safe."""

    def __init__(
        self,
        *,
        settings: BreakerSettings | None = None,
        global_settings: BreakerSettings | None = None,
        store: BreakerStore | None = None,
        clock: Clock | None = None,
        on_event: EventCallback | None = None,
    ) -> None:
        self.settings = BreakerSettings() if settings is None else settings
        self._store: BreakerStore = MemoryBreakerStore() if store is None else store
        self._clock = clock
        self._on_event = on_event
        self._lock = threading.Lock()
        self._breakers: dict[str, CircuitBreaker] = {}
        self._groups: dict[str, BreakerGroup] = {}
        self.global_breaker = self._make(GLOBAL_NAME, global_settings or self.settings)

    def _make(self, name: str, settings: BreakerSettings) -> CircuitBreaker:
        return CircuitBreaker(
            name, settings=settings, store=self._store, clock=self._clock, on_event=self._on_event
        )

    def breaker_for(self, key: BreakerKey) -> CircuitBreaker:
        """The breaker of ``key``, created on first use."""
        name = _key_name(key)
        breaker = self._breakers.get(name)
        if breaker is None:
            with self._lock:
                breaker = self._breakers.get(name)
                if breaker is None:
                    breaker = self._breakers[name] = self._make(name, self.settings)
        return breaker

    def guard(self, key: BreakerKey) -> BreakerGroup:
        """The global breaker and the breaker of ``key``, both of which must admit a call."""
        name = _key_name(key)
        group = self._groups.get(name)
        if group is None:
            group = BreakerGroup((self.global_breaker, self.breaker_for(key)))
            group = self._groups.setdefault(name, group)
        return group

    def breakers(self) -> dict[str, CircuitBreaker]:
        """Every breaker by name, the global one first."""
        with self._lock:
            return {GLOBAL_NAME: self.global_breaker, **dict(sorted(self._breakers.items()))}

    def health(self) -> dict[str, BreakerSnapshot]:
        """A snapshot of every breaker by name, the global one first."""
        return {name: breaker.snapshot() for name, breaker in self.breakers().items()}

    def reset(self) -> None:
        """Close every breaker and forget its counts."""
        for breaker in self.breakers().values():
            breaker.reset()

    def __len__(self) -> int:
        """How many keyed breakers exist (the global one not included)."""
        return len(self._breakers)
