"""The failure-rate windows, as pure functions over the fields of a ``BreakerRecord``.

* Count window: the last ``size`` calls as a bit mask (newest in bit 0, 1 = counted
  failure) and how many calls it holds (at most ``size``). Pushing is a shift and a mask.
* Time window: ``TIME_WINDOW_BUCKETS`` buckets of ``bucket_s`` seconds in a ring, each a
  ``(calls, failures)`` pair; a bucket older than the window is cleared before reuse, so
  the window always covers the last ``TIME_WINDOW_BUCKETS`` buckets up to now.
"""

from __future__ import annotations

from backstay.breaker.settings import TIME_WINDOW_BUCKETS

__all__ = ["count_push", "count_totals", "time_push", "time_totals"]

_N = TIME_WINDOW_BUCKETS


def count_push(bits: int, calls: int, *, failed: bool, size: int) -> tuple[int, int]:
    """The count window after one more call: ``(bits, calls)``."""
    return ((bits << 1) | failed) & ((1 << size) - 1), min(calls + 1, size)


def count_totals(bits: int, calls: int) -> tuple[int, int]:
    """``(calls, failures)`` in a count window."""
    return calls, bits.bit_count()


def _index(now: float, bucket_s: float) -> int:
    return int(now // bucket_s)


def time_push(
    bucket_at: int, buckets: tuple[int, ...], *, failed: bool, now: float, bucket_s: float
) -> tuple[int, tuple[int, ...]]:
    """The time window after one more call at ``now``: ``(bucket_at, buckets)``.

    A clock that steps back counts the call in the newest bucket instead.
    """
    index = _index(now, bucket_s)
    if not buckets or index - bucket_at >= _N:
        ring = [0] * (2 * _N)
        bucket_at = index
    else:
        ring = list(buckets)
        for stale in range(bucket_at + 1, index + 1):
            slot = (stale % _N) * 2
            ring[slot] = ring[slot + 1] = 0
        bucket_at = max(index, bucket_at)
    slot = (bucket_at % _N) * 2
    ring[slot] += 1
    ring[slot + 1] += failed
    return bucket_at, tuple(ring)


def time_totals(
    bucket_at: int, buckets: tuple[int, ...], *, now: float, bucket_s: float
) -> tuple[int, int]:
    """``(calls, failures)`` in the time window as seen at ``now`` (stale buckets excluded)."""
    if not buckets:
        return 0, 0
    oldest = max(_index(now, bucket_s), bucket_at) - _N + 1
    calls = failures = 0
    for index in range(max(oldest, bucket_at - _N + 1), bucket_at + 1):
        slot = (index % _N) * 2
        calls += buckets[slot]
        failures += buckets[slot + 1]
    return calls, failures
