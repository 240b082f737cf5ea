"""The methods every ``OperationStore`` shares, over one primitive: an atomic transaction.

A concrete store supplies ``_transaction(operation_id, fn)``: read the record, read the
clock, call the pure ``fn(record, now) → (new_record, answer)``, write ``new_record`` when
it is a different object (and not ``None``), all atomically; and ``_load`` for plain reads.
Arguments are validated before any transaction starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, TypeVar

from backstay._checks import check_name, check_number
from backstay.clock import Clock
from backstay.errors import ConfigError
from backstay.idempotency import leases
from backstay.idempotency.records import (
    Busy,
    CachedResult,
    Claim,
    Lease,
    OperationRecord,
    OperationState,
    encode_result,
)

__all__ = ["DEFAULT_RESULT_TTL_S", "StoreBase", "TransactionFn"]

# A completed operation answers repeated calls for a day: long enough to cover a batch's
# retries and resumes, short enough that stores do not grow without bound.
DEFAULT_RESULT_TTL_S: Final = 24 * 3600.0

T = TypeVar("T")
TransactionFn = Callable[[OperationRecord | None, float], tuple[OperationRecord | None, T]]


class StoreBase:
    """``claim``/``renew``/``complete``/``release``/``revoke``/``get`` over ``_transaction``."""

    def __init__(self, *, clock: Clock, result_ttl_s: float) -> None:
        check_number(result_ttl_s, where="result_ttl_s", above=True)
        self._clock = clock
        self._result_ttl_s = float(result_ttl_s)

    @property
    def result_ttl_s(self) -> float:
        return self._result_ttl_s

    def _now(self) -> float:
        return self._clock.now().timestamp()

    def _transaction(self, operation_id: str, fn: TransactionFn[T]) -> T:
        raise NotImplementedError

    def _load(self, operation_id: str) -> OperationRecord | None:
        raise NotImplementedError

    def claim(
        self, operation_id: str, owner: str, ttl_s: float, *, take_over: Busy | None = None
    ) -> Claim:
        check_name(operation_id, where="operation_id")
        check_name(owner, where="owner")
        check_number(ttl_s, where="ttl_s", above=True)
        if take_over is not None and not isinstance(take_over, Busy):
            raise ConfigError(f"must be a Busy claim, got {take_over!r}", where="take_over")
        ttl = float(ttl_s)

        def fn(record: OperationRecord | None, now: float) -> tuple[OperationRecord | None, Claim]:
            return leases.claim(
                record,
                operation_id=operation_id,
                owner=owner,
                ttl_s=ttl,
                now=now,
                take_over=take_over,
            )

        return self._transaction(operation_id, fn)

    def renew(self, lease: Lease) -> bool:
        def fn(record: OperationRecord | None, now: float) -> tuple[OperationRecord | None, bool]:
            new = leases.renew(record, lease, now)
            return new, new is not None

        return self._transaction(lease.operation_id, fn)

    def complete(self, lease: Lease, result: Mapping[str, object]) -> CachedResult | None:
        text = encode_result(result)
        ttl = self._result_ttl_s

        def fn(
            record: OperationRecord | None, now: float
        ) -> tuple[OperationRecord | None, CachedResult | None]:
            new = leases.complete(record, lease, result_json=text, result_ttl_s=ttl, now=now)
            return new, leases.cached(new, now)

        return self._transaction(lease.operation_id, fn)

    def release(self, lease: Lease) -> bool:
        def fn(record: OperationRecord | None, now: float) -> tuple[OperationRecord | None, bool]:
            new = leases.release(record, lease)
            return new, new is not None

        return self._transaction(lease.operation_id, fn)

    def revoke(self, operation_id: str) -> bool:
        """End the current lease of ``operation_id`` whoever holds it (its holder's next
        renewal is refused, and it stops); ``False`` when no lease was held."""
        check_name(operation_id, where="operation_id")

        def fn(record: OperationRecord | None, now: float) -> tuple[OperationRecord | None, bool]:
            new = leases.revoke(record)
            return new, new is not None

        return self._transaction(operation_id, fn)

    def get(self, operation_id: str) -> CachedResult | None:
        return leases.cached(self._load(operation_id), self._now())

    def holder(self, operation_id: str) -> str | None:
        """The owner of the live lease on ``operation_id``, or ``None`` (read only)."""
        record = self._load(operation_id)
        if record is None or record.state is not OperationState.LEASED:
            return None
        expires = record.lease_expires_at
        return record.owner if expires is not None and expires > self._now() else None
