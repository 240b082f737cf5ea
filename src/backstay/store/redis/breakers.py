"""``RedisBreakerStore`` and ``RedisFallbackStore``: circuit breakers and fallback
cooldowns shared by every process and machine on one Redis.

A breaker's record is one JSON string at ``{ns:brk:<name>}`` (its own hash tag: breakers
of different providers and models land on different Cluster slots). Each transition is
one optimistic transaction (``backstay.store.redis._tx``) running the breaker's pure
transition — the same code as the memory and SQLite stores — so a trip (a failure-rate
window or consecutive failures) is counted from every worker's outcomes, and a half-open
circuit hands its probe slots out exactly once fleet-wide: the slot is part of the record,
taken in the transaction, and given again only after ``probe_timeout_s`` (the probe's
lease) if its holder never reports. Record times are Unix seconds from the breaker's
clock: the engine gives it a ``RedisClock``, so every machine stamps on Redis's time line.

Fallback cooldowns are ``{ns:cool:<name>}`` strings ``until|reason``, raised by one Lua
script that keeps the later end (every key passed in ``KEYS``).
"""

from __future__ import annotations

import json
from typing import Final

from redis.client import Pipeline

from backstay.breaker.record import CLOSED_RECORD, BreakerRecord
from backstay.breaker.state import Step
from backstay.breaker.store import BreakerStore, TransitionFn
from backstay.store.redis._client import RedisConnection
from backstay.store.redis._tx import transact

__all__ = ["RedisBreakerStore", "RedisFallbackStore"]

_KEEP_LATER: Final = """
local stored = redis.call('GET', KEYS[1])
if stored then
  local bar = string.find(stored, '|', 1, true)
  if tonumber(string.sub(stored, 1, bar - 1)) >= tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. ARGV[2])
return 1
"""


def _decode(raw: bytes | str | None) -> BreakerRecord | None:
    return None if raw is None else BreakerRecord.from_dict(json.loads(raw))


class RedisBreakerStore:
    """Breaker records in Redis under the connection's namespace. Thread-safe."""

    shared: Final = True

    def __init__(self, conn: RedisConnection, *, prefix: str = "brk") -> None:
        self._conn = conn
        self._prefix = prefix
        self._index = conn.key(f"{prefix}-names")

    def _key(self, name: str) -> str:
        return self._conn.key(f"{self._prefix}:{name}")

    def load(self, name: str) -> BreakerRecord | None:
        key = self._key(name)
        return _decode(self._conn.call(lambda client: client.get(key)))

    def transition(self, name: str, fn: TransitionFn) -> Step:
        key = self._key(name)

        def decide(pipe: Pipeline, now: float) -> Step:
            del now  # the breaker stamps its own records (its clock follows Redis's)
            record = _decode(pipe.get(key)) or CLOSED_RECORD
            step = fn(record)
            pipe.multi()
            if step.record is not record:
                pipe.set(key, json.dumps(step.record.to_dict(), separators=(",", ":")))
            return step

        step = transact(self._conn, [key], decide)
        if step.record is not CLOSED_RECORD:
            # The index of names lives on its own slot: a separate, idempotent write.
            self._conn.call(lambda client: client.sadd(self._index, name))
        return step

    def names(self) -> list[str]:
        found = self._conn.call(lambda client: client.smembers(self._index))
        return sorted(n.decode() if isinstance(n, bytes) else str(n) for n in found)

    def close(self) -> None:
        """The connection belongs to the bundle; nothing to close here."""


class RedisFallbackStore:
    """A fallback chain's breakers and cooldowns in Redis. Thread-safe."""

    def __init__(self, conn: RedisConnection) -> None:
        self._conn = conn
        self._breakers = RedisBreakerStore(conn, prefix="fbrk")
        self._script = conn.client.register_script(_KEEP_LATER)

    @property
    def breakers(self) -> BreakerStore:
        return self._breakers

    def cool_down(self, name: str, *, until_s: float, reason: str) -> None:
        key = self._conn.key(f"cool:{name}")
        args = [repr(float(until_s)), reason]
        self._conn.call(lambda client: self._script(keys=[key], args=args, client=client))

    def cooling_until(self, name: str, *, now_s: float) -> float | None:
        key = self._conn.key(f"cool:{name}")
        raw = self._conn.call(lambda client: client.get(key))
        if raw is None:
            return None
        text = raw.decode() if isinstance(raw, bytes) else str(raw)
        until = float(text.split("|", 1)[0])
        return None if until <= now_s else until

    def close(self) -> None:
        """The connection belongs to the bundle; nothing to close here."""
