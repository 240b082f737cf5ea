"""Persistence: the protocols backstay's durable state is kept behind, and their stores.

``OperationStore`` (leases and the result cache of idempotent operations) with
``MemoryOperationStore`` and ``SQLiteOperationStore``; the lease protocol itself is pure
code in ``backstay.store.leases`` (docs/design/idempotency.md). ``location``: where a
batch's state lives (a state directory, or ``redis://`` with the ``redis`` extra, whose
stores are in ``backstay.store.redis``) and the ``StoreBundle`` the engine opens there
(docs/scale-out.md).
"""

from __future__ import annotations

from backstay.store._base import DEFAULT_RESULT_TTL_S
from backstay.store.location import (
    STORE_ENV_VAR,
    StoreBundle,
    StoreKind,
    StoreLocation,
    StoreUnavailable,
    StoreUnreachable,
    open_stores,
    parse_store,
    resolve_store,
)
from backstay.store.memory import MemoryOperationStore
from backstay.store.protocol import OperationStore
from backstay.store.records import (
    Acquired,
    Busy,
    CachedResult,
    Claim,
    Done,
    Lease,
    OperationRecord,
    OperationState,
)
from backstay.store.sqlite import SQLiteOperationStore

__all__ = [
    "DEFAULT_RESULT_TTL_S",
    "STORE_ENV_VAR",
    "Acquired",
    "Busy",
    "CachedResult",
    "Claim",
    "Done",
    "Lease",
    "MemoryOperationStore",
    "OperationRecord",
    "OperationState",
    "OperationStore",
    "SQLiteOperationStore",
    "StoreBundle",
    "StoreKind",
    "StoreLocation",
    "StoreUnavailable",
    "StoreUnreachable",
    "open_stores",
    "parse_store",
    "resolve_store",
]
