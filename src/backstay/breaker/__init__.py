"""Circuit breakers: fail fast while an operation is down, probe it carefully back up.

``CircuitBreaker`` is the driver; ``backstay.breaker.state`` the pure state machine;
``BreakerStore`` where records live (``MemoryBreakerStore``; the SQLite and Redis ones
in ``backstay.store``, where ``SQLiteBreakerStore`` moved: importing it from here still
works for one release);
``BreakerRegistry`` one breaker per operation key plus a global one. See
``docs/design/breaker.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

from backstay.breaker.breaker import CircuitBreaker, EventCallback
from backstay.breaker.events import BreakerEvent, CircuitClosed, CircuitHalfOpened, CircuitOpened
from backstay.breaker.group import BreakerGroup
from backstay.breaker.memory import MemoryBreakerStore
from backstay.breaker.record import BreakerRecord, CircuitState
from backstay.breaker.registry import GLOBAL_NAME, BreakerKey, BreakerRegistry
from backstay.breaker.settings import DEFAULT_COUNTED_KINDS, BreakerSettings, WindowKind
from backstay.breaker.snapshot import BreakerSnapshot
from backstay.breaker.state import TransitionReason
from backstay.breaker.store import BreakerStore

if TYPE_CHECKING:
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

_MOVED: Final = {"SQLiteBreakerStore": "backstay.store"}


def __getattr__(name: str) -> Any:
    # Moved to backstay.store (the SQLite wing); kept here for one release.
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
