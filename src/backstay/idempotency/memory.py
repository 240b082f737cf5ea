"""``MemoryOperationStore``: operations in a dict, for one process. Thread-safe.

Transactions hold a lock striped by operation id for the microseconds the pure lease
function runs, so operations with different ids rarely wait for each other.
"""

from __future__ import annotations

import threading
from typing import Final

from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.idempotency._store_base import DEFAULT_RESULT_TTL_S, StoreBase, T, TransactionFn
from backstay.idempotency.records import OperationRecord

__all__ = ["MemoryOperationStore"]

_STRIPES: Final = 16


class MemoryOperationStore(StoreBase):
    """Leases and results in process memory; lost when the process ends."""

    shared: Final = False

    def __init__(
        self, *, clock: Clock = SYSTEM_CLOCK, result_ttl_s: float = DEFAULT_RESULT_TTL_S
    ) -> None:
        super().__init__(clock=clock, result_ttl_s=result_ttl_s)
        self._records: dict[str, OperationRecord] = {}
        self._locks = tuple(threading.Lock() for _ in range(_STRIPES))

    def _load(self, operation_id: str) -> OperationRecord | None:
        return self._records.get(operation_id)

    def _transaction(self, operation_id: str, fn: TransactionFn[T]) -> T:
        with self._locks[hash(operation_id) % _STRIPES]:
            record = self._records.get(operation_id)
            new, answer = fn(record, self._now())
            if new is not None and new is not record:
                self._records[operation_id] = new
        return answer
