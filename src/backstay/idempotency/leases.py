"""The lease protocol as pure functions: ``(record, arguments, now) → (record, answer)``.

Every store runs these inside its own atomic section (a lock, a ``BEGIN IMMEDIATE``
transaction, a Redis ``WATCH``/``MULTI``), so every store behaves identically. They do no
I/O and read no clock; ``now`` is wall-clock UTC seconds.

* ``claim``: a live result → ``Done``; a live lease → ``Busy`` (also for its own owner:
  leases are not re-entrant); otherwise a new lease with ``generation + 1`` →
  ``Acquired``. An expired lease or result is simply replaced (takeover).
* ``renew``, ``complete``, ``release``: accepted only from the lease of the current
  generation that is still ``leased`` (the fence). A lease that expired but was not taken
  over is still current: nobody else can have started the operation.
* ``revoke``: an operator ends whatever lease is current, without holding it (``backstay
  cancel`` of a running task): its holder's next renewal is refused, so it stops.

``None`` as the new record means "refused, nothing to write".
"""

from __future__ import annotations

import dataclasses

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

__all__ = ["cached", "claim", "complete", "holds", "release", "renew", "revoke"]


def cached(record: OperationRecord | None, now: float) -> CachedResult | None:
    """The live result in ``record``, or ``None`` (none yet, or expired)."""
    if record is None or record.state is not OperationState.DONE:
        return None
    if record.result_expires_at is None or record.result_expires_at <= now:
        return None
    if record.result_json is None or record.owner is None or record.completed_at is None:
        return None
    return CachedResult(
        operation_id=record.operation_id,
        result_json=record.result_json,
        owner=record.owner,
        generation=record.generation,
        completed_at=record.completed_at,
        expires_at=record.result_expires_at,
    )


def claim(
    record: OperationRecord | None,
    *,
    operation_id: str,
    owner: str,
    ttl_s: float,
    now: float,
    take_over: Busy | None = None,
) -> tuple[OperationRecord | None, Claim]:
    """Decide a claim: ``Done``, ``Busy`` (record unchanged) or ``Acquired`` (new record).
    A live lease is taken only when ``take_over`` names exactly it (holder, generation)."""
    done = cached(record, now)
    if done is not None:
        return record, Done(result=done)
    if (
        record is not None
        and record.state is OperationState.LEASED
        and record.owner is not None
        and record.lease_expires_at is not None
        and record.lease_expires_at > now
        and not _names(take_over, record)
    ):
        busy = Busy(
            operation_id=operation_id,
            held_by=record.owner,
            generation=record.generation,
            expires_at=record.lease_expires_at,
        )
        return record, busy
    generation = (record.generation if record is not None else 0) + 1
    lease = Lease(
        operation_id=operation_id,
        owner=owner,
        generation=generation,
        ttl_s=ttl_s,
        expires_at=now + ttl_s,
    )
    new = OperationRecord(
        operation_id=operation_id,
        generation=generation,
        state=OperationState.LEASED,
        owner=owner,
        lease_ttl_s=ttl_s,
        lease_expires_at=lease.expires_at,
    )
    return new, Acquired(lease=lease)


def _names(busy: Busy | None, record: OperationRecord) -> bool:
    return (
        busy is not None and busy.held_by == record.owner and busy.generation == record.generation
    )


def holds(record: OperationRecord | None, lease: Lease) -> bool:
    """True when ``lease`` is the operation's current lease (the fencing check)."""
    return (
        record is not None
        and record.state is OperationState.LEASED
        and record.generation == lease.generation
        and record.owner == lease.owner
    )


def renew(record: OperationRecord | None, lease: Lease, now: float) -> OperationRecord | None:
    """The record with the lease's expiry pushed to ``now + lease.ttl_s``, or ``None``."""
    if record is None or not holds(record, lease):
        return None
    return dataclasses.replace(record, lease_ttl_s=lease.ttl_s, lease_expires_at=now + lease.ttl_s)


def release(record: OperationRecord | None, lease: Lease) -> OperationRecord | None:
    """The record with the lease given up and nothing recorded as done, or ``None``."""
    if record is None or not holds(record, lease):
        return None
    return OperationRecord(operation_id=record.operation_id, generation=record.generation)


def revoke(record: OperationRecord | None) -> OperationRecord | None:
    """The record with its current lease ended, whoever holds it, or ``None`` when no
    lease is held (a result, or nothing, stays as it is)."""
    if record is None or record.state is not OperationState.LEASED:
        return None
    return OperationRecord(operation_id=record.operation_id, generation=record.generation)


def complete(
    record: OperationRecord | None,
    lease: Lease,
    *,
    result_json: str,
    result_ttl_s: float,
    now: float,
) -> OperationRecord | None:
    """The record holding ``result_json`` until ``now + result_ttl_s``, or ``None``."""
    if record is None or not holds(record, lease):
        return None
    return OperationRecord(
        operation_id=record.operation_id,
        generation=record.generation,
        state=OperationState.DONE,
        owner=lease.owner,
        result_json=result_json,
        completed_at=now,
        result_expires_at=now + result_ttl_s,
    )
