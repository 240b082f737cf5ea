"""``RedisOperationStore``: leases and the result cache of operations, shared by every
process and machine that opens the same Redis.

Each ``claim``/``renew``/``complete``/``release`` is one optimistic transaction
(``backstay.store.redis._tx``) running the pure lease functions of
``backstay.idempotency.leases`` — the same code as the memory and SQLite stores — on the
operation's record, one JSON string at ``{ns:op:<operation_id>}``. Times are stamped
with Redis's clock (``TIME``), so workers with skewed clocks agree on every expiry; a
``clock`` may be injected instead (tests).

The fence is the record's ``generation``: a late ``complete`` from an owner whose lease
was taken over is refused. A completed operation's key expires (``PEXPIREAT``) a minute
after its result does, so Redis does not fill up; a leased one never expires on its own
(its generation must not go back to zero while a presumed-dead owner may still answer).

``claim``, ``complete`` and ``release`` answer a replay of themselves (Redis applied them, then its
reply was lost, and the connection's ``wait`` mode runs them again: ``replaying``) as if
they had just applied, rather than as a lost lease.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Final

from redis.client import Pipeline

from backstay._checks import check_name, check_number
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.errors import ConfigError
from backstay.idempotency import leases
from backstay.idempotency._store_base import DEFAULT_RESULT_TTL_S, StoreBase, T, TransactionFn
from backstay.idempotency.records import (
    Acquired,
    Busy,
    CachedResult,
    Claim,
    Lease,
    OperationRecord,
    OperationState,
    encode_result,
)
from backstay.store.redis._client import RedisConnection, server_time
from backstay.store.redis._tx import transact

__all__ = ["RedisOperationStore"]

_KEEP_AFTER_EXPIRY_S: Final = 60.0


def _decode(raw: bytes | str | None) -> OperationRecord | None:
    if raw is None:
        return None
    data = json.loads(raw)
    data["state"] = OperationState(data["state"])
    return OperationRecord(**data)


def _encode(record: OperationRecord) -> str:
    data = dataclasses.asdict(record)
    data["state"] = record.state.value
    return json.dumps(data, separators=(",", ":"))


def _done_by(record: OperationRecord | None, lease: Lease) -> bool:
    return (
        record is not None
        and record.state is OperationState.DONE
        and (record.owner, record.generation) == (lease.owner, lease.generation)
    )


def _leased_to(record: OperationRecord | None, owner: str, now: float) -> float | None:
    """When the live lease ``owner`` holds on ``record`` expires; ``None`` if it holds none."""
    if record is None or record.state is not OperationState.LEASED or record.owner != owner:
        return None
    expires = record.lease_expires_at
    return expires if expires is not None and expires > now else None


def _released(record: OperationRecord | None, lease: Lease) -> bool:
    return (
        record is not None
        and record.state is OperationState.IDLE
        and record.generation == lease.generation
    )


class RedisOperationStore(StoreBase):
    """Operations in Redis under the connection's namespace. Thread-safe."""

    shared: Final = True

    def __init__(
        self,
        conn: RedisConnection,
        *,
        clock: Clock | None = None,
        result_ttl_s: float = DEFAULT_RESULT_TTL_S,
    ) -> None:
        super().__init__(clock=clock or SYSTEM_CLOCK, result_ttl_s=result_ttl_s)
        self._conn = conn
        self._own_clock = clock

    def _key(self, operation_id: str) -> str:
        return self._conn.key(f"op:{operation_id}")

    def _now(self) -> float:
        if self._own_clock is not None:
            return self._own_clock.now().timestamp()
        return server_time(self._conn.call(lambda client: client.time()))

    def claim(
        self, operation_id: str, owner: str, ttl_s: float, *, take_over: Busy | None = None
    ) -> Claim:
        """``StoreBase.claim``; a replay of a claim already applied (see the module
        docstring) gets the lease it took instead of finding it busy with itself."""
        check_name(operation_id, where="operation_id")
        check_name(owner, where="owner")
        check_number(ttl_s, where="ttl_s", above=True)
        if take_over is not None and not isinstance(take_over, Busy):
            raise ConfigError(f"must be a Busy claim, got {take_over!r}", where="take_over")
        ttl, conn = float(ttl_s), self._conn

        def fn(record: OperationRecord | None, now: float) -> tuple[OperationRecord | None, Claim]:
            expires = _leased_to(record, owner, now) if conn.replaying else None
            if record is not None and expires is not None:
                lease = Lease(
                    operation_id=operation_id,
                    owner=owner,
                    generation=record.generation,
                    ttl_s=ttl,
                    expires_at=expires,
                )
                return None, Acquired(lease=lease)
            return leases.claim(
                record, operation_id=operation_id, owner=owner, ttl_s=ttl, now=now,
                take_over=take_over,
            )  # fmt: skip

        return self._transaction(operation_id, fn)

    def complete(self, lease: Lease, result: Mapping[str, object]) -> CachedResult | None:
        """``StoreBase.complete``; a replay of a completion already applied (see the
        module docstring) gets its result instead of a refusal."""
        text = encode_result(result)
        ttl = self._result_ttl_s
        replaying = self._conn

        def fn(
            record: OperationRecord | None, now: float
        ) -> tuple[OperationRecord | None, CachedResult | None]:
            if replaying.replaying and _done_by(record, lease):
                return None, leases.cached(record, now)
            new = leases.complete(record, lease, result_json=text, result_ttl_s=ttl, now=now)
            return new, leases.cached(new, now)

        return self._transaction(lease.operation_id, fn)

    def release(self, lease: Lease) -> bool:
        """``StoreBase.release``; ``True`` for a replay of a release already applied."""
        conn = self._conn

        def fn(record: OperationRecord | None, now: float) -> tuple[OperationRecord | None, bool]:
            del now
            if conn.replaying and _released(record, lease):
                return None, True
            new = leases.release(record, lease)
            return new, new is not None

        return self._transaction(lease.operation_id, fn)

    def _load(self, operation_id: str) -> OperationRecord | None:
        key = self._key(operation_id)
        return _decode(self._conn.call(lambda client: client.get(key)))

    def _transaction(self, operation_id: str, fn: TransactionFn[T]) -> T:
        key = self._key(operation_id)
        redis_clock = self._own_clock is None

        def decide(pipe: Pipeline, now: float) -> T:
            record = _decode(pipe.get(key))
            new, answer = fn(record, now)
            pipe.multi()
            if new is not None and new is not record:
                pipe.set(key, _encode(new))
                if redis_clock and new.result_expires_at is not None:
                    at_ms = int((new.result_expires_at + _KEEP_AFTER_EXPIRY_S) * 1000)
                    pipe.pexpireat(key, at_ms)
            return answer

        return transact(self._conn, [key], decide, clock=self._own_clock)

    def close(self) -> None:
        """The connection belongs to the bundle; nothing to close here."""
