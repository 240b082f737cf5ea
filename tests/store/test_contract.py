"""The OperationStore contract, run against every store (memory and SQLite)."""

from __future__ import annotations

import pytest

from backstay.idempotency._store_base import StoreBase
from backstay.idempotency.records import Acquired, Busy, Done, Lease
from backstay.idempotency.store import OperationStore
from backstay.testing import FakeClock

OP = "wf:task:run"
TTL_S = 10.0
RESULT_TTL_S = 100.0  # as in conftest


def _acquire(store: StoreBase, owner: str = "w1", ttl_s: float = TTL_S) -> Lease:
    claim = store.claim(OP, owner, ttl_s)
    assert isinstance(claim, Acquired)
    return claim.lease


def test_it_is_an_operation_store(store: StoreBase) -> None:
    assert isinstance(store, OperationStore)


def test_a_new_operation_is_acquired_with_generation_one(
    store: StoreBase, clock: FakeClock
) -> None:
    lease = _acquire(store)
    assert (lease.operation_id, lease.owner, lease.generation) == (OP, "w1", 1)
    assert lease.expires_at == clock.now().timestamp() + TTL_S


def test_a_held_operation_is_busy_for_another_owner(store: StoreBase) -> None:
    lease = _acquire(store)
    claim = store.claim(OP, "w2", TTL_S)
    assert claim == Busy(operation_id=OP, held_by="w1", generation=1, expires_at=lease.expires_at)


def test_a_held_operation_is_busy_for_its_own_owner_too(store: StoreBase) -> None:
    _acquire(store)
    assert isinstance(store.claim(OP, "w1", TTL_S), Busy)


def test_a_completed_operation_is_done_with_its_result(store: StoreBase) -> None:
    store.complete(_acquire(store), {"answer": 42})
    claim = store.claim(OP, "w2", TTL_S)
    assert isinstance(claim, Done)
    assert claim.result.result == {"answer": 42}
    assert claim.result.owner == "w1"


def test_complete_returns_the_result_as_stored(store: StoreBase, clock: FakeClock) -> None:
    cached = store.complete(_acquire(store), {"items": (1, 2)})
    assert cached is not None
    assert cached.result == {"items": [1, 2]}
    assert cached.completed_at == clock.now().timestamp()
    assert cached.expires_at == cached.completed_at + RESULT_TTL_S


def test_get_returns_nothing_for_an_operation_not_completed(store: StoreBase) -> None:
    assert store.get(OP) is None
    _acquire(store)
    assert store.get(OP) is None


def test_get_returns_the_cached_result_within_its_ttl(store: StoreBase, clock: FakeClock) -> None:
    store.complete(_acquire(store), {"n": 1})
    clock.advance(RESULT_TTL_S - 0.001)
    cached = store.get(OP)
    assert cached is not None
    assert cached.result == {"n": 1}


def test_get_ignores_an_expired_result(store: StoreBase, clock: FakeClock) -> None:
    store.complete(_acquire(store), {"n": 1})
    clock.advance(RESULT_TTL_S)
    assert store.get(OP) is None


def test_an_expired_result_lets_the_operation_be_claimed_again(
    store: StoreBase, clock: FakeClock
) -> None:
    store.complete(_acquire(store), {"n": 1})
    clock.advance(RESULT_TTL_S)
    assert _acquire(store, "w2").generation == 2


def test_an_expired_lease_is_taken_over_with_a_larger_generation(
    store: StoreBase, clock: FakeClock
) -> None:
    _acquire(store, "w1")
    clock.advance(TTL_S)
    taken = _acquire(store, "w2")
    assert (taken.owner, taken.generation) == ("w2", 2)


def test_a_late_complete_from_a_taken_over_lease_is_refused(
    store: StoreBase, clock: FakeClock
) -> None:
    old = _acquire(store, "w1")
    clock.advance(TTL_S)
    new = _acquire(store, "w2")
    assert store.complete(old, {"from": "w1"}) is None
    assert store.get(OP) is None
    assert store.complete(new, {"from": "w2"}) is not None


def test_a_late_complete_cannot_replace_a_recorded_result(
    store: StoreBase, clock: FakeClock
) -> None:
    old = _acquire(store, "w1")
    clock.advance(TTL_S)
    store.complete(_acquire(store, "w2"), {"from": "w2"})
    assert store.complete(old, {"from": "w1"}) is None
    cached = store.get(OP)
    assert cached is not None
    assert cached.result == {"from": "w2"}


def test_a_taken_over_lease_can_no_longer_be_renewed_or_released(
    store: StoreBase, clock: FakeClock
) -> None:
    old = _acquire(store, "w1")
    clock.advance(TTL_S)
    _acquire(store, "w2")
    assert store.renew(old) is False
    assert store.release(old) is False
    assert isinstance(store.claim(OP, "w3", TTL_S), Busy)


def test_renew_pushes_the_expiry_to_ttl_from_now(store: StoreBase, clock: FakeClock) -> None:
    lease = _acquire(store)
    clock.advance(TTL_S * 0.9)
    assert store.renew(lease) is True
    clock.advance(TTL_S * 0.9)
    claim = store.claim(OP, "w2", TTL_S)
    assert isinstance(claim, Busy)
    assert claim.expires_at == lease.expires_at + TTL_S * 0.9


def test_an_expired_lease_nobody_took_over_can_still_be_renewed(
    store: StoreBase, clock: FakeClock
) -> None:
    lease = _acquire(store)
    clock.advance(TTL_S * 2)
    assert store.renew(lease) is True
    assert isinstance(store.claim(OP, "w2", TTL_S), Busy)


def test_an_expired_lease_nobody_took_over_can_still_complete(
    store: StoreBase, clock: FakeClock
) -> None:
    lease = _acquire(store)
    clock.advance(TTL_S * 2)
    assert store.complete(lease, {"ok": True}) is not None


def test_release_lets_the_next_claimant_acquire_at_once(store: StoreBase) -> None:
    lease = _acquire(store, "w1")
    assert store.release(lease) is True
    assert _acquire(store, "w2").generation == 2
    assert store.get(OP) is None


def test_a_released_lease_cannot_complete(store: StoreBase) -> None:
    lease = _acquire(store)
    store.release(lease)
    assert store.complete(lease, {"n": 1}) is None
    assert store.get(OP) is None


def test_a_completed_lease_can_no_longer_be_renewed_or_released(store: StoreBase) -> None:
    lease = _acquire(store)
    store.complete(lease, {"n": 1})
    assert store.renew(lease) is False
    assert store.release(lease) is False
    assert store.get(OP) is not None


def test_a_second_complete_of_one_lease_is_refused(store: StoreBase) -> None:
    lease = _acquire(store)
    store.complete(lease, {"n": 1})
    assert store.complete(lease, {"n": 2}) is None


def test_a_lease_of_another_owner_with_the_same_generation_is_refused(store: StoreBase) -> None:
    lease = _acquire(store, "w1")
    forged = Lease(
        operation_id=OP, owner="w2", generation=lease.generation, ttl_s=1.0, expires_at=0.0
    )
    assert store.complete(forged, {"n": 1}) is None
    assert store.renew(forged) is False


def test_operations_are_independent(store: StoreBase) -> None:
    _acquire(store)
    assert isinstance(store.claim("wf:task:other", "w2", TTL_S), Acquired)


def test_a_result_that_is_not_json_is_refused_and_the_lease_kept(store: StoreBase) -> None:
    lease = _acquire(store)
    with pytest.raises(ValueError, match="result"):
        store.complete(lease, {"when": object()})
    assert store.renew(lease) is True


def test_the_cached_result_cannot_be_changed_through_a_returned_copy(store: StoreBase) -> None:
    store.complete(_acquire(store), {"items": [1]})
    first = store.get(OP)
    assert first is not None
    first.result["items"].append(2)
    again = store.get(OP)
    assert again is not None
    assert again.result == {"items": [1]}
