"""``TokenBucket``: a pure, frozen token bucket whose level may go below zero.

``tokens`` is the level at time ``updated_at``; from then on it grows by ``refill_per_s``
per second, never above ``capacity``. Taking more than the bucket holds is allowed: the
level goes negative (a debt) and the taker is told how long to wait until the debt is
repaid. Because every taker adds to the same debt, takers are served in the order they
took — the due times of successive takes never decrease — instead of all trying at once.

``updated_at`` may lie in the future: nothing accrues before it. That is how a block
(a provider's Retry-After or reset time) is written: ``blocked(now, until)``. ``synced``
rebuilds the level from what the provider reports left, less what it has not seen yet.

Every method takes ``now`` and returns a new bucket; none reads a clock.
"""

from __future__ import annotations

import dataclasses
import math

from backstay._checks import check_number

__all__ = ["TokenBucket"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TokenBucket:
    """A token bucket as a value. ``tokens ≤ capacity``; below zero is a debt of reservations."""

    capacity: float
    refill_per_s: float
    tokens: float
    updated_at: float

    def __post_init__(self) -> None:
        check_number(self.capacity, where="TokenBucket.capacity", above=True)
        check_number(self.refill_per_s, where="TokenBucket.refill_per_s", above=True)
        check_number(
            self.tokens, where="TokenBucket.tokens", minimum=-math.inf, maximum=self.capacity
        )
        check_number(self.updated_at, where="TokenBucket.updated_at", minimum=-math.inf)

    @classmethod
    def full(cls, *, capacity: float, refill_per_s: float, now: float) -> TokenBucket:
        """A bucket holding ``capacity`` tokens at ``now``."""
        return cls(capacity=capacity, refill_per_s=refill_per_s, tokens=capacity, updated_at=now)

    def level(self, now: float) -> float:
        """The level at ``now`` (negative while reservations are outstanding)."""
        if now <= self.updated_at:
            return self.tokens
        grown = self.tokens + (now - self.updated_at) * self.refill_per_s
        return min(self.capacity, grown)

    def _moved(self, tokens: float, updated_at: float) -> TokenBucket:
        """This bucket with a new level, unvalidated: every caller keeps ``tokens`` at most
        ``capacity`` (validation would cost more than the arithmetic it guards)."""
        bucket = object.__new__(TokenBucket)
        set_ = object.__setattr__
        set_(bucket, "capacity", self.capacity)
        set_(bucket, "refill_per_s", self.refill_per_s)
        set_(bucket, "tokens", tokens)
        set_(bucket, "updated_at", updated_at)
        return bucket

    def refilled(self, now: float) -> TokenBucket:
        """The same bucket with its level brought forward to ``now`` (never backwards)."""
        if now <= self.updated_at:
            return self
        return self._moved(self.level(now), now)

    def take(self, now: float, tokens: float = 1.0) -> tuple[TokenBucket, float]:
        """Reserve ``tokens`` at ``now``: the new bucket and the seconds to wait before using
        them (0 when the bucket held enough). The reservation holds whatever the wait."""
        check_number(tokens, where="tokens")
        start = max(now, self.updated_at)
        left = self.level(now) - tokens
        # Relative to now, not as an absolute due time: monotonic times are large numbers and
        # subtracting them would lose the exactness of a short wait.
        wait = (start - now) + max(0.0, -left) / self.refill_per_s
        return self._moved(left, start), max(0.0, wait)

    def blocked(self, now: float, until: float) -> TokenBucket:
        """Nothing accrues before ``until`` (or ``now``, if later), and the level there is at
        most zero: after a block callers resume one by one at the refill rate, not all at
        once. Reservations already due after ``until`` keep their place."""
        check_number(until, where="until", minimum=-math.inf)
        start = max(now, until)
        if start <= self.updated_at:
            return self._moved(min(self.tokens, 0.0), self.updated_at)
        return self._moved(min(self.level(start), 0.0), start)

    def capped(self, now: float, remaining: float) -> TokenBucket:
        """The level at ``now`` lowered to ``remaining`` if it was higher (never raised:
        whoever reported ``remaining`` does not know of reservations still to arrive)."""
        check_number(remaining, where="remaining", minimum=-math.inf)
        bucket = self.refilled(now)
        if bucket.tokens <= remaining:
            return bucket
        return bucket._moved(remaining, bucket.updated_at)

    def resized(self, now: float, *, capacity: float, refill_per_s: float) -> TokenBucket:
        """A new capacity and refill rate from ``now`` on; the level is kept, capped."""
        bucket = self.refilled(now)
        return TokenBucket(
            capacity=capacity,
            refill_per_s=refill_per_s,
            tokens=min(bucket.tokens, capacity),
            updated_at=bucket.updated_at,
        )

    def synced(
        self, now: float, *, remaining: float, since: float, outstanding: float
    ) -> TokenBucket:
        """The level at ``now`` as the provider reports it: ``remaining`` when it counted
        (``since``, at most ``now``), plus the refill since then, at most ``capacity``, less
        ``outstanding`` — what was reserved after the answered request, which the provider
        had not counted yet. May raise the level as well as lower it. A bucket blocked past
        ``now`` keeps its block, and still ends it with a level of at most zero."""
        check_number(remaining, where="remaining", minimum=-math.inf)
        check_number(outstanding, where="outstanding", minimum=-math.inf)
        start = max(now, self.updated_at)
        grown = remaining + max(0.0, start - since) * self.refill_per_s
        level = min(self.capacity, grown) - outstanding
        if start > now:
            level = min(level, 0.0)
        return self._moved(level, start)
