"""Failure-rate windows: the count window is the last N calls, the time window the last T s."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from backstay.breaker.settings import TIME_WINDOW_BUCKETS
from backstay.breaker.window import count_push, count_totals, time_push, time_totals


def test_count_window_holds_at_most_its_size() -> None:
    bits, calls = 0, 0
    for _ in range(5):
        bits, calls = count_push(bits, calls, failed=True, size=3)
    assert count_totals(bits, calls) == (3, 3)


def test_count_window_forgets_the_oldest_call() -> None:
    bits, calls = count_push(0, 0, failed=True, size=2)
    bits, calls = count_push(bits, calls, failed=False, size=2)
    bits, calls = count_push(bits, calls, failed=False, size=2)
    assert count_totals(bits, calls) == (2, 0)


@given(st.lists(st.booleans(), max_size=60), st.integers(1, 20))
def test_count_window_matches_the_last_n_outcomes(outcomes: list[bool], size: int) -> None:
    bits, calls = 0, 0
    for failed in outcomes:
        bits, calls = count_push(bits, calls, failed=failed, size=size)
    last = outcomes[-size:] if outcomes else []
    assert count_totals(bits, calls) == (len(last), sum(last))


def test_time_window_counts_calls_in_the_same_bucket() -> None:
    at, buckets = time_push(0, (), failed=True, now=100.0, bucket_s=1.0)
    at, buckets = time_push(at, buckets, failed=False, now=100.5, bucket_s=1.0)
    assert time_totals(at, buckets, now=100.9, bucket_s=1.0) == (2, 1)


def test_time_window_drops_calls_older_than_the_window() -> None:
    at, buckets = time_push(0, (), failed=True, now=100.0, bucket_s=1.0)
    at, buckets = time_push(at, buckets, failed=False, now=105.0, bucket_s=1.0)
    assert time_totals(at, buckets, now=105.0, bucket_s=1.0) == (2, 1)
    assert time_totals(at, buckets, now=100.0 + TIME_WINDOW_BUCKETS, bucket_s=1.0) == (1, 0)
    assert time_totals(at, buckets, now=200.0, bucket_s=1.0) == (0, 0)


def test_time_window_after_a_long_gap_starts_empty() -> None:
    at, buckets = time_push(0, (), failed=True, now=100.0, bucket_s=1.0)
    at, buckets = time_push(at, buckets, failed=False, now=500.0, bucket_s=1.0)
    assert time_totals(at, buckets, now=500.0, bucket_s=1.0) == (1, 0)


def test_time_window_counts_a_call_from_a_clock_that_stepped_back_in_the_newest_bucket() -> None:
    at, buckets = time_push(0, (), failed=False, now=100.0, bucket_s=1.0)
    at, buckets = time_push(at, buckets, failed=True, now=90.0, bucket_s=1.0)
    assert at == 100
    assert time_totals(at, buckets, now=100.0, bucket_s=1.0) == (2, 1)


@given(
    st.lists(
        st.tuples(st.floats(0.0, 3.0, allow_nan=False), st.booleans()), min_size=1, max_size=40
    )
)
def test_time_window_matches_a_list_of_timestamped_calls(steps: list[tuple[float, bool]]) -> None:
    bucket_s = 0.5
    now, at = 1000.0, 0
    buckets: tuple[int, ...] = ()
    calls: list[tuple[int, bool]] = []
    for gap, failed in steps:
        now += gap
        at, buckets = time_push(at, buckets, failed=failed, now=now, bucket_s=bucket_s)
        calls.append((int(now // bucket_s), failed))
    newest = int(now // bucket_s)
    kept = [f for index, f in calls if index > newest - TIME_WINDOW_BUCKETS]
    assert time_totals(at, buckets, now=now, bucket_s=bucket_s) == (len(kept), sum(kept))
