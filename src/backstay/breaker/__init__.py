"""Circuit breakers: fail fast while an operation is down, probe it carefully back up.

``CircuitBreaker`` is the driver; ``backstay.breaker.state`` the pure state machine;
``BreakerStore`` where records live (``MemoryBreakerStore``, ``SQLiteBreakerStore``);
``BreakerRegistry`` one breaker per operation key plus a global one. See
``docs/design/breaker.md``.
"""

from __future__ import annotations

from backstay.breaker.breaker import CircuitBreaker, EventCallback
from backstay.breaker.events import BreakerEvent, CircuitClosed, CircuitHalfOpened, CircuitOpened
from backstay.breaker.group import BreakerGroup
from backstay.breaker.memory import MemoryBreakerStore
from backstay.breaker.record import BreakerRecord, CircuitState
from backstay.breaker.registry import GLOBAL_NAME, BreakerKey, BreakerRegistry
from backstay.breaker.settings import DEFAULT_COUNTED_KINDS, BreakerSettings, WindowKind
from backstay.breaker.snapshot import BreakerSnapshot
from backstay.breaker.sqlite import SQLiteBreakerStore
from backstay.breaker.state import TransitionReason
from backstay.breaker.store import BreakerStore

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
    "SQLiteBreakerStore",
    "TransitionReason",
    "WindowKind",
]
