"""Idempotent operations: run each operation at most once, however often it is retried.

``operation_id``/``attempt_id`` name operations and their attempts; ``IdempotencyGuard``
claims an operation with a lease in an ``OperationStore`` (``store``: the contract;
``records``, ``leases``: its records and the pure lease rules; ``MemoryOperationStore``;
the durable ones in ``backstay.store``), runs it,
and caches its result so that every later call gets the result instead of a second run.
See ``docs/design/idempotency.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from backstay._lazy_names import listed_names, load_name

if TYPE_CHECKING:
    from backstay.idempotency._store_base import DEFAULT_RESULT_TTL_S
    from backstay.idempotency.descriptor import SkillDescriptor
    from backstay.idempotency.errors import LeaseLost, MissingIdempotencyKey, OperationInProgress
    from backstay.idempotency.guard import AsyncOperation, IdempotencyGuard, SyncOperation
    from backstay.idempotency.ids import (
        AttemptIdParts,
        OperationIdParts,
        attempt_id,
        operation_id,
        parse_attempt_id,
        parse_operation_id,
    )
    from backstay.idempotency.memory import MemoryOperationStore
    from backstay.idempotency.owners import default_owner, holder_is_dead
    from backstay.idempotency.records import (
        Acquired,
        Busy,
        CachedResult,
        Claim,
        Done,
        Lease,
        OperationRecord,
        OperationState,
    )
    from backstay.idempotency.settings import GuardSettings
    from backstay.idempotency.store import OperationStore


__all__ = [
    "DEFAULT_RESULT_TTL_S",
    "Acquired",
    "AsyncOperation",
    "AttemptIdParts",
    "Busy",
    "CachedResult",
    "Claim",
    "Done",
    "GuardSettings",
    "IdempotencyGuard",
    "Lease",
    "LeaseLost",
    "MemoryOperationStore",
    "MissingIdempotencyKey",
    "OperationIdParts",
    "OperationInProgress",
    "OperationRecord",
    "OperationState",
    "OperationStore",
    "SkillDescriptor",
    "SyncOperation",
    "attempt_id",
    "default_owner",
    "holder_is_dead",
    "operation_id",
    "parse_attempt_id",
    "parse_operation_id",
]

# Where each name lives, imported on first use: importing a module of this package
# (``ids``, ``settings`` …) loads only what that module needs.
_LAZY: Final = {
    "Acquired": "backstay.idempotency.records",
    "AsyncOperation": "backstay.idempotency.guard",
    "AttemptIdParts": "backstay.idempotency.ids",
    "Busy": "backstay.idempotency.records",
    "CachedResult": "backstay.idempotency.records",
    "Claim": "backstay.idempotency.records",
    "DEFAULT_RESULT_TTL_S": "backstay.idempotency._store_base",
    "Done": "backstay.idempotency.records",
    "GuardSettings": "backstay.idempotency.settings",
    "IdempotencyGuard": "backstay.idempotency.guard",
    "Lease": "backstay.idempotency.records",
    "LeaseLost": "backstay.idempotency.errors",
    "MemoryOperationStore": "backstay.idempotency.memory",
    "MissingIdempotencyKey": "backstay.idempotency.errors",
    "OperationIdParts": "backstay.idempotency.ids",
    "OperationInProgress": "backstay.idempotency.errors",
    "OperationRecord": "backstay.idempotency.records",
    "OperationState": "backstay.idempotency.records",
    "OperationStore": "backstay.idempotency.store",
    "SkillDescriptor": "backstay.idempotency.descriptor",
    "SyncOperation": "backstay.idempotency.guard",
    "attempt_id": "backstay.idempotency.ids",
    "default_owner": "backstay.idempotency.owners",
    "holder_is_dead": "backstay.idempotency.owners",
    "operation_id": "backstay.idempotency.ids",
    "parse_attempt_id": "backstay.idempotency.ids",
    "parse_operation_id": "backstay.idempotency.ids",
}


def __getattr__(name: str) -> Any:
    return load_name(globals(), name, _LAZY)


def __dir__() -> list[str]:
    return listed_names(globals())
