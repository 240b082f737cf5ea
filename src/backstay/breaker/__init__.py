"""Circuit breakers: fail fast while an operation is down, probe it carefully back up.

``CircuitBreaker`` is the driver; ``backstay.breaker.state`` the pure state machine;
``BreakerStore`` where records live (``MemoryBreakerStore``; the SQLite and Redis ones
in ``backstay.store``, where ``SQLiteBreakerStore`` moved: importing it from here still
works for one release);
``BreakerRegistry`` one breaker per operation key plus a global one. See
``docs/design/breaker.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from backstay._lazy_names import listed_names, load_name

if TYPE_CHECKING:
    from backstay.breaker.breaker import CircuitBreaker, EventCallback
    from backstay.breaker.events import (
        BreakerEvent,
        CircuitClosed,
        CircuitHalfOpened,
        CircuitOpened,
    )
    from backstay.breaker.group import BreakerGroup
    from backstay.breaker.memory import MemoryBreakerStore
    from backstay.breaker.record import BreakerRecord, CircuitState
    from backstay.breaker.registry import GLOBAL_NAME, BreakerKey, BreakerRegistry
    from backstay.breaker.settings import DEFAULT_COUNTED_KINDS, BreakerSettings, WindowKind
    from backstay.breaker.snapshot import BreakerSnapshot
    from backstay.breaker.state import TransitionReason
    from backstay.breaker.store import BreakerStore
    from backstay.store.sqlite.breakers import SQLiteBreakerStore as SQLiteBreakerStore

__all__ = [
    "DEFAULT_COUNTED_KINDS",
    "GLOBAL_NAME",
    "BreakerEvent",
    "BreakerGroup",
    "BreakerKey",
    "BreakerRecord",
    "BreakerRegistry",
    "BreakerSettings",
    "BreakerSnapshot",
    "BreakerStore",
    "CircuitBreaker",
    "CircuitClosed",
    "CircuitHalfOpened",
    "CircuitOpened",
    "CircuitState",
    "EventCallback",
    "MemoryBreakerStore",
    "TransitionReason",
    "WindowKind",
]

# Where each name lives, imported on first use: importing a module of this package
# (``events``, ``settings`` …) loads only what that module needs.
_LAZY: Final = {
    "BreakerEvent": "backstay.breaker.events",
    "BreakerGroup": "backstay.breaker.group",
    "BreakerKey": "backstay.breaker.registry",
    "BreakerRecord": "backstay.breaker.record",
    "BreakerRegistry": "backstay.breaker.registry",
    "BreakerSettings": "backstay.breaker.settings",
    "BreakerSnapshot": "backstay.breaker.snapshot",
    "BreakerStore": "backstay.breaker.store",
    "CircuitBreaker": "backstay.breaker.breaker",
    "CircuitClosed": "backstay.breaker.events",
    "CircuitHalfOpened": "backstay.breaker.events",
    "CircuitOpened": "backstay.breaker.events",
    "CircuitState": "backstay.breaker.record",
    "DEFAULT_COUNTED_KINDS": "backstay.breaker.settings",
    "EventCallback": "backstay.breaker.breaker",
    "GLOBAL_NAME": "backstay.breaker.registry",
    "MemoryBreakerStore": "backstay.breaker.memory",
    "TransitionReason": "backstay.breaker.state",
    "WindowKind": "backstay.breaker.settings",
}
_MOVED: Final = {"SQLiteBreakerStore": "backstay.store"}


def __getattr__(name: str) -> Any:
    # A name of this package, or one moved to backstay.store (the SQLite wing; kept here
    # for one release): imported on first use.
    return load_name(globals(), name, _LAZY, _MOVED)


def __dir__() -> list[str]:
    return listed_names(globals())
