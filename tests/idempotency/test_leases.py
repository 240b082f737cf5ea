"""The pure lease protocol: decisions from a record and ``now``, and its invariants."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from backstay.idempotency import leases
from backstay.idempotency.records import (
    Acquired,
    Busy,
    Done,
    Lease,
    OperationRecord,
    OperationState,
)

OP = "wf:task:run"


def _claim(
    record: OperationRecord | None, owner: str = "w1", *, now: float = 0.0, ttl_s: float = 10.0
) -> tuple[OperationRecord | None, Acquired | Done | Busy]:
    return leases.claim(record, operation_id=OP, owner=owner, ttl_s=ttl_s, now=now)


def test_claiming_nothing_acquires_generation_one() -> None:
    record, claim = _claim(None, now=5.0)
    assert isinstance(claim, Acquired)
    assert claim.lease == Lease(
        operation_id=OP, owner="w1", generation=1, ttl_s=10.0, expires_at=15.0
    )
    assert record is not None
    assert record.state is OperationState.LEASED


def test_a_busy_claim_leaves_the_record_as_it_was() -> None:
    held, _ = _claim(None)
    record, claim = _claim(held, "w2", now=1.0)
    assert record is held
    assert isinstance(claim, Busy)


def test_a_lease_is_expired_exactly_at_its_expiry() -> None:
    held, _ = _claim(None, ttl_s=10.0)
    assert isinstance(_claim(held, "w2", now=9.999)[1], Busy)
    assert isinstance(_claim(held, "w2", now=10.0)[1], Acquired)


def test_a_done_claim_leaves_the_record_as_it_was() -> None:
    held, claim = _claim(None)
    assert isinstance(claim, Acquired)
    done = leases.complete(held, claim.lease, result_json="{}", result_ttl_s=5.0, now=1.0)
    record, again = _claim(done, "w2", now=2.0)
    assert record is done
    assert isinstance(again, Done)


def test_holds_needs_the_same_generation_owner_and_a_leased_state() -> None:
    held, claim = _claim(None)
    assert isinstance(claim, Acquired)
    lease = claim.lease
    assert leases.holds(held, lease)
    assert not leases.holds(held, dataclasses.replace(lease, generation=2))
    assert not leases.holds(held, dataclasses.replace(lease, owner="w2"))
    assert not leases.holds(None, lease)
    assert not leases.holds(leases.release(held, lease), lease)


def test_release_keeps_the_generation_so_fencing_survives_it() -> None:
    held, claim = _claim(None)
    assert isinstance(claim, Acquired)
    released = leases.release(held, claim.lease)
    assert released == OperationRecord(operation_id=OP, generation=1)


def test_cached_ignores_a_record_that_is_not_done() -> None:
    held, _ = _claim(None)
    assert leases.cached(held, 0.0) is None
    assert leases.cached(None, 0.0) is None


_OWNERS = ("w1", "w2", "w3")
_STEP = st.tuples(
    st.sampled_from(("claim", "renew", "complete", "release")),
    st.sampled_from(_OWNERS),
    st.floats(min_value=0.0, max_value=8.0, allow_nan=False),
)


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(_STEP, max_size=40))
def test_random_histories_keep_the_invariants(steps: list[tuple[str, str, float]]) -> None:
    """At most one current lease; generations only grow; a live result is never replaced;
    only the current lease's owner ever completes."""
    record: OperationRecord | None = None
    held: dict[str, Lease] = {}
    now = 0.0
    for action, owner, advance in steps:
        now += advance
        before = record
        if action == "claim":
            record, claim = _claim(record, owner, now=now, ttl_s=5.0)
            if isinstance(claim, Acquired):
                held[owner] = claim.lease
        elif owner in held:
            lease = held[owner]
            if action == "renew":
                record = leases.renew(record, lease, now) or record
            elif action == "release":
                record = leases.release(record, lease) or record
            else:
                done = leases.complete(record, lease, result_json="{}", result_ttl_s=20.0, now=now)
                if done is not None:
                    assert leases.cached(before, now) is None
                    assert done.owner == owner
                record = done or record
        current = [o for o, lease in held.items() if leases.holds(record, lease)]
        assert len(current) <= 1
        if before is not None and record is not None:
            assert record.generation >= before.generation
        live = leases.cached(before, now)
        if live is not None:
            assert leases.cached(record, now) == live


def test_a_live_lease_is_taken_over_only_when_the_claim_names_exactly_it() -> None:
    record, first = _claim(None, "dead", now=0.0)
    assert isinstance(first, Acquired)
    _, busy = _claim(record, "me", now=1.0)
    assert isinstance(busy, Busy)
    stale = dataclasses.replace(busy, generation=busy.generation + 1)
    other = dataclasses.replace(busy, held_by="someone-else")
    for wrong in (stale, other):
        _, refused = leases.claim(
            record, operation_id=OP, owner="me", ttl_s=10.0, now=1.0, take_over=wrong
        )
        assert isinstance(refused, Busy)
    new, taken = leases.claim(
        record, operation_id=OP, owner="me", ttl_s=10.0, now=1.0, take_over=busy
    )
    assert isinstance(taken, Acquired)
    assert taken.lease.generation == first.lease.generation + 1  # the dead holder is fenced
    assert not leases.holds(new, first.lease)
