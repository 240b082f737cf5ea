"""TokenBucket: exact refill math, reservations as debt, blocks, and its invariants."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backstay import ConfigError
from backstay.policy.bucket import TokenBucket


def _empty(capacity: float = 10.0, rate: float = 2.0, at: float = 0.0) -> TokenBucket:
    return TokenBucket(capacity=capacity, refill_per_s=rate, tokens=0.0, updated_at=at)


def test_a_full_bucket_holds_its_capacity() -> None:
    bucket = TokenBucket.full(capacity=10.0, refill_per_s=2.0, now=5.0)
    assert (bucket.tokens, bucket.updated_at) == (10.0, 5.0)


def test_the_level_grows_by_the_refill_rate() -> None:
    assert _empty().level(1.5) == 3.0


def test_the_level_never_passes_the_capacity() -> None:
    assert _empty().level(100.0) == 10.0


def test_refilling_moves_the_level_and_the_time_forward() -> None:
    bucket = _empty().refilled(1.25)
    assert (bucket.tokens, bucket.updated_at) == (2.5, 1.25)


def test_refilling_never_goes_back_in_time() -> None:
    bucket = _empty(at=10.0)
    assert bucket.refilled(5.0) is bucket


def test_taking_what_the_bucket_holds_needs_no_wait() -> None:
    bucket, wait = TokenBucket.full(capacity=10.0, refill_per_s=2.0, now=0.0).take(0.0, 10.0)
    assert (wait, bucket.tokens) == (0.0, 0.0)


def test_taking_more_than_the_bucket_holds_waits_for_the_deficit() -> None:
    bucket, wait = _empty().take(0.0, 4.0)
    assert (wait, bucket.tokens) == (2.0, -4.0)


def test_successive_takes_queue_one_behind_the_other() -> None:
    bucket = _empty(rate=4.0)
    waits = []
    for _ in range(3):
        bucket, wait = bucket.take(0.0, 1.0)
        waits.append(wait)
    assert waits == [0.25, 0.5, 0.75]


def test_a_take_later_on_waits_only_for_what_is_still_owed() -> None:
    bucket, _ = _empty(rate=1.0).take(0.0, 3.0)  # due at 3.0
    _, wait = bucket.take(2.0, 1.0)
    assert wait == 2.0  # due at 4.0


def test_a_take_may_exceed_the_capacity() -> None:
    bucket, wait = TokenBucket.full(capacity=10.0, refill_per_s=2.0, now=0.0).take(0.0, 30.0)
    assert (wait, bucket.tokens) == (10.0, -20.0)


def test_a_block_gives_nothing_until_it_ends() -> None:
    bucket = TokenBucket.full(capacity=10.0, refill_per_s=2.0, now=0.0).blocked(0.0, 30.0)
    assert bucket.level(29.0) == 0.0


def test_after_a_block_callers_resume_at_the_refill_rate() -> None:
    bucket = TokenBucket.full(capacity=10.0, refill_per_s=2.0, now=0.0).blocked(0.0, 30.0)
    waits = []
    for _ in range(3):
        bucket, wait = bucket.take(0.0, 1.0)
        waits.append(wait)
    assert waits == [30.5, 31.0, 31.5]


def test_a_block_keeps_reservations_due_after_it() -> None:
    bucket = TokenBucket(capacity=10.0, refill_per_s=1.0, tokens=-10.0, updated_at=0.0)
    assert bucket.blocked(0.0, 4.0).level(4.0) == -6.0


def test_a_shorter_block_does_not_shorten_a_longer_one() -> None:
    bucket = _empty().blocked(0.0, 30.0).blocked(0.0, 5.0)
    assert bucket.updated_at == 30.0


def test_a_block_in_the_past_empties_the_bucket_now() -> None:
    bucket = TokenBucket.full(capacity=10.0, refill_per_s=2.0, now=0.0).blocked(8.0, 3.0)
    assert (bucket.tokens, bucket.updated_at) == (0.0, 8.0)


def test_capping_lowers_the_level() -> None:
    bucket = TokenBucket.full(capacity=10.0, refill_per_s=2.0, now=0.0).capped(0.0, 3.0)
    assert bucket.tokens == 3.0


def test_capping_never_raises_the_level() -> None:
    assert _empty().capped(0.0, 8.0).tokens == 0.0


def test_resizing_keeps_the_level_under_the_new_capacity() -> None:
    bucket = TokenBucket.full(capacity=10.0, refill_per_s=2.0, now=0.0)
    smaller = bucket.resized(0.0, capacity=4.0, refill_per_s=1.0)
    assert (smaller.capacity, smaller.refill_per_s, smaller.tokens) == (4.0, 1.0, 4.0)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("capacity", 0.0),
        ("capacity", float("inf")),
        ("refill_per_s", -1.0),
        ("refill_per_s", 0.0),
        ("tokens", 11.0),
        ("tokens", float("nan")),
        ("updated_at", float("nan")),
    ],
)
def test_a_bad_bucket_names_the_field(field: str, value: float) -> None:
    with pytest.raises(ConfigError) as info:
        dataclasses.replace(_empty(), **{field: value})
    assert info.value.where == f"TokenBucket.{field}"


@pytest.mark.parametrize("tokens", [-1.0, float("nan"), float("inf")])
def test_taking_a_bad_amount_is_refused(tokens: float) -> None:
    with pytest.raises(ConfigError) as info:
        _empty().take(0.0, tokens)
    assert info.value.where == "tokens"


# Each step: advance the clock, take some tokens, or block until some time from now.
_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("advance"), st.floats(0.0, 20.0)),
        st.tuples(st.just("take"), st.floats(0.0, 40.0)),
        st.tuples(st.just("block"), st.floats(0.0, 30.0)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(
    capacity=st.floats(1.0, 100.0),
    rate=st.floats(0.1, 50.0),
    start_full=st.booleans(),
    steps=_STEPS,
)
def test_bucket_invariants_hold_for_any_sequence(
    capacity: float, rate: float, start_full: bool, steps: list[tuple[str, float]]
) -> None:
    """Never above capacity; below zero by at most what is reserved and not yet due; waits
    never negative; reservations served in the order they were made."""
    now = 0.0
    bucket = TokenBucket(
        capacity=capacity, refill_per_s=rate, tokens=capacity if start_full else 0.0, updated_at=0.0
    )
    reservations: list[tuple[float, float]] = []  # (due time, tokens)
    for op, amount in steps:
        if op == "advance":
            now += amount
        elif op == "take":
            bucket, wait = bucket.take(now, amount)
            assert wait >= 0.0
            due = now + wait
            if reservations:
                assert due >= reservations[-1][0] - 1e-9
            reservations.append((due, amount))
        else:
            bucket = bucket.blocked(now, now + amount)
        level = bucket.level(now)
        assert bucket.tokens <= capacity
        assert level <= capacity
        outstanding = sum(n for due, n in reservations if due > now)
        assert -level <= outstanding + 1e-6 * (1.0 + outstanding)


# -- synced: the level the provider reports, less what it has not seen ---------------------


def test_synced_raises_the_level_to_what_the_provider_reports() -> None:
    bucket = TokenBucket(capacity=100.0, refill_per_s=10.0, tokens=-50.0, updated_at=0.0)
    synced = bucket.synced(1.0, remaining=80.0, since=1.0, outstanding=0.0)
    assert (synced.tokens, synced.updated_at) == (80.0, 1.0)


def test_synced_takes_off_what_was_reserved_after_the_answered_request() -> None:
    bucket = TokenBucket.full(capacity=100.0, refill_per_s=10.0, now=0.0)
    synced = bucket.synced(0.0, remaining=30.0, since=0.0, outstanding=45.0)
    assert synced.level(0.0) == -15.0


def test_synced_adds_the_refill_since_the_provider_counted_up_to_the_capacity() -> None:
    bucket = TokenBucket.full(capacity=100.0, refill_per_s=10.0, now=0.0)
    assert bucket.synced(2.0, remaining=50.0, since=1.0, outstanding=0.0).level(2.0) == 60.0
    assert bucket.synced(2.0, remaining=95.0, since=0.0, outstanding=5.0).level(2.0) == 95.0


def test_synced_keeps_a_block_and_ends_it_with_at_most_nothing() -> None:
    blocked = TokenBucket.full(capacity=100.0, refill_per_s=10.0, now=0.0).blocked(0.0, 5.0)
    synced = blocked.synced(1.0, remaining=90.0, since=1.0, outstanding=0.0)
    assert (synced.tokens, synced.updated_at) == (0.0, 5.0)
    owed = blocked.synced(1.0, remaining=0.0, since=1.0, outstanding=70.0)
    assert owed.level(5.0) == -30.0  # 40 refilled until the block ends, 70 owed
