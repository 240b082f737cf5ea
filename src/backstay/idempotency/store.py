"""``OperationStore``: leases and the result cache of idempotent operations.

One store keeps, per ``operation_id``, either nothing, a lease (someone is running it) or
a result (it completed). Every method that changes anything is atomic with respect to
every other call on the same operation, across threads and — for shared stores — across
processes: ``claim`` never hands two live leases on one operation to anyone.

The contract, identical for every implementation (they all run ``backstay.idempotency.leases``
inside their atomic section):

* ``claim(operation_id, owner, ttl_s)`` → ``Acquired(lease)``, ``Done(result)`` or
  ``Busy(held_by, expires_at)``. A lease or result past its expiry is taken over.
* ``renew(lease)`` → ``True`` and the lease runs ``ttl_s`` from now, or ``False`` when
  the lease is no longer current (taken over, released or completed).
* ``complete(lease, result)`` stores ``result`` for the store's result TTL and ends the
  lease in one step → the ``CachedResult``; ``None`` when the lease is no longer current
  (nothing is stored: a late complete from a fenced-off owner is refused).
* ``release(lease)`` ends the lease recording nothing → ``False`` when it was not current.
* ``get(operation_id)`` → the live ``CachedResult`` or ``None``; expired ones are ignored.
* ``holder(operation_id)`` → the owner of the live lease, or ``None`` (a reader's look:
  ``status`` shows a running task no live lease holds as ``interrupted``).

Wall-clock expiries come from the store's injected clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from backstay.idempotency.records import Busy, CachedResult, Claim, Lease

__all__ = ["OperationStore"]


@runtime_checkable
class OperationStore(Protocol):
    """Leases and cached results of operations; see the module docstring for the contract."""

    @property
    def shared(self) -> bool:
        """True when other processes see the same operations (and they survive restarts)."""
        ...

    @property
    def result_ttl_s(self) -> float:
        """How long a completed operation's result is kept, in seconds."""
        ...

    def claim(
        self, operation_id: str, owner: str, ttl_s: float, *, take_over: Busy | None = None
    ) -> Claim:
        """Take a lease on ``operation_id`` for ``ttl_s`` seconds, or say why not.
        ``take_over``: a ``Busy`` this store answered before, whose holder is known to be
        gone; its lease is taken even though unexpired, if it is still that very lease
        (same holder and generation)."""
        ...

    def renew(self, lease: Lease) -> bool:
        """Extend ``lease`` to ``ttl_s`` from now; ``False`` when it was lost."""
        ...

    def complete(self, lease: Lease, result: Mapping[str, object]) -> CachedResult | None:
        """Record ``result`` and end ``lease`` atomically; ``None`` when it was lost."""
        ...

    def release(self, lease: Lease) -> bool:
        """End ``lease`` recording nothing as done; ``False`` when it was lost already."""
        ...

    def get(self, operation_id: str) -> CachedResult | None:
        """The live cached result of ``operation_id``, or ``None``."""
        ...

    def holder(self, operation_id: str) -> str | None:
        """The owner of the live lease on ``operation_id``, or ``None``; read only."""
        ...
