"""The timing decisions of the guard, shared by its async and sync drivers. No I/O.

* ``RenewalSchedule``: when the lease keeper renews (every ``ttl * RENEW_FRACTION``), how
  long it may wait before looking again, and when a run of failed renewals means the
  lease must be presumed lost.
* ``WaitSchedule``: how long a caller that found the operation ``Busy`` waits before
  claiming again (growing delays, never past its wait timeout), or the
  ``OperationInProgress`` it raises instead.
"""

from __future__ import annotations

from typing import Final

from backstay.idempotency.errors import OperationInProgress
from backstay.idempotency.records import Busy
from backstay.idempotency.settings import RENEW_FRACTION, GuardSettings

__all__ = ["RenewalSchedule", "WaitSchedule"]

# The keeper looks at the clock at least ten times per renewal interval, so a manual
# clock that is advanced by a test is noticed promptly; never more often than this.
_MIN_TICK_S: Final = 0.001
_TICKS_PER_INTERVAL: Final = 10


class RenewalSchedule:
    """When to renew a lease of ``ttl_s`` acquired at ``start`` (wall-clock seconds)."""

    __slots__ = ("_next_at", "_valid_until", "interval_s", "tick_s", "ttl_s")

    def __init__(self, ttl_s: float, start: float) -> None:
        self.ttl_s = ttl_s
        self.interval_s = ttl_s * RENEW_FRACTION
        self.tick_s = max(self.interval_s / _TICKS_PER_INTERVAL, _MIN_TICK_S)
        self._next_at = start + self.interval_s
        self._valid_until = start + ttl_s

    def wait_s(self, now: float) -> float:
        """Seconds to wait before looking again; ``0.0`` when a renewal is due."""
        return max(0.0, min(self._next_at - now, self.tick_s))

    def renewed(self, now: float) -> None:
        self._next_at = now + self.interval_s
        self._valid_until = now + self.ttl_s

    def renewal_failed(self, now: float) -> bool:
        """A renewal raised: try again soon. ``False`` once the lease has surely run out."""
        left = self._valid_until - now
        if left <= 0:
            return False
        self._next_at = now + min(self.interval_s, left / 2)
        return True


class WaitSchedule:
    """The polling of one caller waiting for another owner's run, from monotonic ``start``."""

    __slots__ = ("_delay", "_settings", "_start", "_timeout_s")

    def __init__(self, settings: GuardSettings, *, timeout_s: float, start: float) -> None:
        self._settings = settings
        self._timeout_s = timeout_s
        self._start = start
        self._delay = settings.poll_initial_s

    def next_delay(self, busy: Busy, *, wait: bool, now: float, wall_now: float) -> float:
        """The delay before claiming again, or raise ``OperationInProgress``."""
        waited = now - self._start
        left = self._timeout_s - waited
        if not wait or left <= 0:
            raise OperationInProgress(
                busy.operation_id,
                held_by=busy.held_by,
                expires_at=busy.expires_at,
                retry_after_s=max(0.0, busy.expires_at - wall_now),
                waited_s=waited if wait else 0.0,
            )
        delay = min(self._delay, left)
        self._delay = min(self._delay * self._settings.poll_multiplier, self._settings.poll_max_s)
        return delay
