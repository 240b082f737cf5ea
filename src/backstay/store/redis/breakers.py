"""``RedisBreakerStore`` and ``RedisFallbackStore``: circuit breakers and fallback
cooldowns shared by every process and machine on one Redis.

A breaker's record is one JSON string at ``{ns:brk:<name>}`` (its own hash tag: breakers
of different providers and models land on different Cluster slots). Each transition runs
the breaker's pure transition — the same code as the memory and SQLite stores — on the
record as last read here, and sends the outcome in one round trip: a compare-and-set
script (``_CAS``) that writes the new record only if the stored one is still the one
decided from (and, when the step changed nothing, writes nothing); if another process
changed it meanwhile, the script answers with the stored record and the transition is
decided again from it. So a trip (a failure-rate window or consecutive failures) is
counted from every worker's outcomes, and a half-open circuit hands its probe slots out
exactly once fleet-wide: the slot is part of the record, taken by the compare-and-set, and
given again only after ``probe_timeout_s`` (the probe's lease) if its holder never
reports. Record times are Unix seconds from the breaker's clock: the engine gives it a
``RedisClock``, so every machine stamps on Redis's time line.

``load`` is one ``GET``; a record's text is parsed once (an unchanged record reads as the
very same object, which the breaker's closed path relies on to allocate nothing). The
names of the breakers with a record are a set at ``{ns:brk-names}``, added to by the
script that writes a record (in a Cluster, whose slots differ, by a ``SADD`` after it).

Fallback cooldowns are ``{ns:cool:<name>}`` strings ``until|reason``, raised by one Lua
script that keeps the later end (every key passed in ``KEYS``).
"""

from __future__ import annotations

import json
from typing import Final

from backstay.breaker.record import CLOSED_RECORD, BreakerRecord
from backstay.breaker.state import Step
from backstay.breaker.store import BreakerStore, TransitionFn
from backstay.store.redis._client import RedisConnection, is_cluster
from backstay.store.redis._lean import LeanScript

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
# KEYS: the record[, the index of names]; ARGV: the text decided from ('' for none), the
# text to write ('' to write nothing), the breaker's name. 1 when applied, else the text
# stored now ('' for none).
_CAS: Final = LeanScript(
    """
local stored = redis.call('GET', KEYS[1]) or ''
if stored ~= ARGV[1] then return stored end
if ARGV[2] ~= '' then
  redis.call('SET', KEYS[1], ARGV[2])
  if KEYS[2] then redis.call('SADD', KEYS[2], ARGV[3]) end
end
return 1
"""
)
_NONE: Final = b""


def _encode(record: BreakerRecord) -> bytes:
    return json.dumps(record.to_dict(), separators=(",", ":")).encode()


def _raw(answer: bytes | str | None) -> bytes:
    if answer is None:
        return _NONE
    return answer.encode() if isinstance(answer, str) else answer


class RedisBreakerStore:
    """Breaker records in Redis under the connection's namespace. Thread-safe."""

    shared: Final = True

    def __init__(self, conn: RedisConnection, *, prefix: str = "brk") -> None:
        self._conn = conn
        self._prefix = prefix
        self._index = conn.key(f"{prefix}-names")
        self._cluster = is_cluster(conn.client)
        # The text last read or written per name, and its record (parsed once).
        self._seen: dict[str, tuple[bytes, BreakerRecord | None]] = {}

    def _key(self, name: str) -> str:
        return self._conn.key(f"{self._prefix}:{name}")

    def _remember(
        self, name: str, raw: bytes, record: BreakerRecord | None = None
    ) -> BreakerRecord | None:
        seen = self._seen.get(name)
        if seen is not None and seen[0] == raw:
            return seen[1]
        if record is None and raw:
            record = BreakerRecord.from_dict(json.loads(raw))
        self._seen[name] = (raw, record)
        return record

    def load(self, name: str) -> BreakerRecord | None:
        return self._remember(name, _raw(self._conn.execute("GET", self._key(name))))

    def transition(self, name: str, fn: TransitionFn) -> Step:
        key = self._key(name)
        keys = [key] if self._cluster else [key, self._index]
        seen = self._seen.get(name)
        if seen is None:
            self.load(name)
            seen = self._seen.get(name) or (_NONE, None)
        raw, record = seen
        while True:
            current = record or CLOSED_RECORD
            step = fn(current)
            text = _NONE if step.record is current else _encode(step.record)
            answer = self._conn.evalsha(_CAS, keys, [raw, text, name])
            if answer == 1:
                break
            raw = _raw(answer)
            record = self._remember(name, raw)
        if text:
            self._remember(name, text, step.record)
            if self._cluster:  # the index of names lives on its own slot
                self._conn.execute("SADD", self._index, name)
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
