"""``RedisClock``: this machine's clock, corrected to Redis's.

Records shared by several machines (breakers, tasks, cooldowns) must be stamped on one
time line, or a machine whose clock runs ahead would see a circuit's open period end
early. Asking Redis ``TIME`` on every decision costs a round trip, so the clock measures
its offset from Redis (the midpoint of a ``TIME`` round trip) once, then every
``refresh_s``, and adds it to the local time. ``monotonic`` and sleeping stay local.
"""

from __future__ import annotations

import datetime as _dt
import threading
import time
from typing import Final

from backstay.clock import SYSTEM_CLOCK
from backstay.store.redis._client import RedisConnection, server_time

__all__ = ["RedisClock"]

DEFAULT_REFRESH_S: Final = 30.0


class RedisClock:
    """A ``Clock`` whose ``now`` follows Redis ``TIME`` (see the module docstring)."""

    def __init__(self, conn: RedisConnection, *, refresh_s: float = DEFAULT_REFRESH_S) -> None:
        self._conn = conn
        self._refresh_s = refresh_s
        self._lock = threading.Lock()
        self._offset_s = 0.0
        self._measured_at = -float("inf")

    @property
    def offset_s(self) -> float:
        """Redis time minus local time, as last measured (seconds)."""
        self._refresh()
        return self._offset_s

    def _refresh(self) -> None:
        if time.monotonic() - self._measured_at < self._refresh_s:
            return
        with self._lock:
            if time.monotonic() - self._measured_at < self._refresh_s:
                return
            before = time.time()
            remote = server_time(self._conn.call(lambda client: client.time()))
            after = time.time()
            self._offset_s = remote - (before + after) / 2
            self._measured_at = time.monotonic()

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> _dt.datetime:
        self._refresh()
        return _dt.datetime.fromtimestamp(time.time() + self._offset_s, tz=_dt.UTC)

    def sleep(self, seconds: float) -> None:
        SYSTEM_CLOCK.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        await SYSTEM_CLOCK.asleep(seconds)
