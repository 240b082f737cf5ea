"""``revoke``: an operator ends whatever lease an operation has (``backstay cancel`` of a
running task), on every operation store (memory, SQLite, a real Redis): the holder's next
renewal is refused, so it stops; a result, or no lease, is left as it is."""

from __future__ import annotations

import pytest

from backstay.idempotency import leases
from backstay.idempotency._store_base import StoreBase
from backstay.idempotency.records import Acquired, Done, OperationRecord, OperationState

OP = "wf:t1:run_01"


def test_a_revoked_lease_is_not_renewed(store: StoreBase) -> None:
    claim = store.claim(OP, "runner-a", 30.0)
    assert isinstance(claim, Acquired)
    assert store.revoke(OP) is True
    assert store.renew(claim.lease) is False
    assert store.complete(claim.lease, {"ok": True}) is None


def test_after_a_revoke_the_operation_can_be_claimed_again(store: StoreBase) -> None:
    first = store.claim(OP, "runner-a", 30.0)
    store.revoke(OP)
    second = store.claim(OP, "runner-b", 30.0)
    assert isinstance(first, Acquired)
    assert isinstance(second, Acquired)
    assert second.lease.generation > first.lease.generation


def test_revoking_without_a_lease_changes_nothing(store: StoreBase) -> None:
    assert store.revoke(OP) is False
    claim = store.claim(OP, "runner-a", 30.0)
    assert isinstance(claim, Acquired)
    store.complete(claim.lease, {"ok": True})
    assert store.revoke(OP) is False
    assert isinstance(store.claim(OP, "runner-b", 30.0), Done)


@pytest.mark.parametrize("state", [OperationState.IDLE, OperationState.DONE])
def test_the_pure_revoke_refuses_what_holds_no_lease(state: OperationState) -> None:
    assert leases.revoke(OperationRecord(operation_id=OP, state=state)) is None
    assert leases.revoke(None) is None
