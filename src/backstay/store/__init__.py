"""Persistence: the protocols backstay's durable state is kept behind, and their stores.

For now: ``OperationStore`` (leases and the result cache of idempotent operations) with
``MemoryOperationStore`` and ``SQLiteOperationStore``; the lease protocol itself is pure
code in ``backstay.store.leases``. Task state joins later. See
``docs/design/idempotency.md``.
"""

from __future__ import annotations

from backstay.store._base import DEFAULT_RESULT_TTL_S
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
]
