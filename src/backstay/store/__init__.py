"""Persistence: every durable backend of backstay's stores, one wing.

``location``: where a batch's state lives (a state directory, or ``redis://`` with the
``redis`` extra) and ``open``: ``open_stores``, the ``StoreBundle`` the engine runs on there
(docs/scale-out.md). ``sqlite/`` and ``redis/`` hold one module per domain, with the same
names in both: ``tasks``, ``spend``, ``circuit_log``, ``breakers``, ``fallback``,
``operations``, ``runs``, ``runtime_memory``. The protocols they keep stay with their
domains (``backstay.engine``, ``backstay.breaker``, ``backstay.fallback``,
``backstay.idempotency``, ``backstay.runtime``).

``OperationStore``, its records and ``MemoryOperationStore`` moved to
``backstay.idempotency``; importing them from here still works for one release.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

from backstay.store.location import (
    STORE_ENV_VAR,
    StoreKind,
    StoreLocation,
    StoreUnavailable,
    StoreUnreachable,
    parse_store,
    resolve_store,
)

if TYPE_CHECKING:
    from backstay.engine.stores import StoreBundle
    from backstay.idempotency import DEFAULT_RESULT_TTL_S as DEFAULT_RESULT_TTL_S
    from backstay.idempotency import Acquired as Acquired
    from backstay.idempotency import Busy as Busy
    from backstay.idempotency import CachedResult as CachedResult
    from backstay.idempotency import Claim as Claim
    from backstay.idempotency import Done as Done
    from backstay.idempotency import Lease as Lease
    from backstay.idempotency import MemoryOperationStore as MemoryOperationStore
    from backstay.idempotency import OperationRecord as OperationRecord
    from backstay.idempotency import OperationState as OperationState
    from backstay.idempotency import OperationStore as OperationStore
    from backstay.store.open import open_stores
    from backstay.store.sqlite.breakers import SQLiteBreakerStore
    from backstay.store.sqlite.circuit_log import SQLiteCircuitLog
    from backstay.store.sqlite.fallback import SQLiteFallbackStore
    from backstay.store.sqlite.operations import SQLiteOperationStore
    from backstay.store.sqlite.spend import SQLiteSpendLedger
    from backstay.store.sqlite.tasks import STATE_FILE, SQLiteTaskStore

# Imported on first use: the SQLite stores import the domains they keep.
_LAZY: Final = {
    "STATE_FILE": "backstay.store.sqlite.tasks",
    "SQLiteBreakerStore": "backstay.store.sqlite.breakers",
    "SQLiteCircuitLog": "backstay.store.sqlite.circuit_log",
    "SQLiteFallbackStore": "backstay.store.sqlite.fallback",
    "SQLiteOperationStore": "backstay.store.sqlite.operations",
    "SQLiteSpendLedger": "backstay.store.sqlite.spend",
    "SQLiteTaskStore": "backstay.store.sqlite.tasks",
    "StoreBundle": "backstay.engine.stores",
    "open_stores": "backstay.store.open",
    # Moved to backstay.idempotency; kept here for one release.
    "DEFAULT_RESULT_TTL_S": "backstay.idempotency",
    "Acquired": "backstay.idempotency",
    "Busy": "backstay.idempotency",
    "CachedResult": "backstay.idempotency",
    "Claim": "backstay.idempotency",
    "Done": "backstay.idempotency",
    "Lease": "backstay.idempotency",
    "MemoryOperationStore": "backstay.idempotency",
    "OperationRecord": "backstay.idempotency",
    "OperationState": "backstay.idempotency",
    "OperationStore": "backstay.idempotency",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "STATE_FILE",
    "STORE_ENV_VAR",
    "SQLiteBreakerStore",
    "SQLiteCircuitLog",
    "SQLiteFallbackStore",
    "SQLiteOperationStore",
    "SQLiteSpendLedger",
    "SQLiteTaskStore",
    "StoreBundle",
    "StoreKind",
    "StoreLocation",
    "StoreUnavailable",
    "StoreUnreachable",
    "open_stores",
    "parse_store",
    "resolve_store",
]
