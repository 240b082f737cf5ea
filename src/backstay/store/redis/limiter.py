"""``RedisRateLimiter``: one rate limiter shared by every process and machine.

It keeps the in-process ``RateLimiter``'s contract (``RateLimiterLike``: ``reserve``,
``observe``; plus ``update_from_headers`` and ``block_for``) with its state in one Redis
hash, ``{ns:lim:<name>[@<credential>]}`` — the hash tag names the provider and model (and
the credential, by a fingerprint, never the key itself), so limiters of different
providers, models and keys spread over a Cluster's slots. Each decision is one Lua script
(``_scripts``), atomic on the server, timed by Redis ``TIME``:

* ``reserve(tokens)``: one request and ``tokens`` from the buckets, whatever the wait;
  the seconds to wait. Every caller of every machine queues in one line.
* ``observe(failure)``: a 429 with a wait blocks the limiter fleet-wide until then
  (capped at ``max_block_s``), and empties the buckets so callers resume at the refill
  rate; ``block_for(seconds)`` does that directly.
* ``update_from_headers(headers)``: limits learned from the provider's rate-limit headers
  size the buckets (a configured rate is a ceiling they can only lower) and ``remaining``
  lowers a level — or, handed the ``Reservation`` the response answers, sets it to what
  the provider had left less what the whole fleet reserved since; one machine's answer
  paces all of them.

* discovery, as the in-process limiter's: with no limit configured and none learned yet,
  the fleet's first ``reservation`` is the probe (``Reservation.probe``) and every other
  caller, on any machine, is held (``recheck_s``: asked again every ``HOLD_RECHECK_S``)
  until the probe's answer teaches the limits or ends (``settle``), a 429 blocks the
  limiter, or ``probe_timeout_s`` passes. ``reserve`` (a wait, never held) lets a caller
  go at the probe's end at the latest.

What it leaves out of the in-process limiter, for now: the learned ratio of charged to
estimated tokens (docs/scale-out.md).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from typing import Any, Final

from backstay._checks import check_name, check_number
from backstay.classify._http import normalize_headers
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.failure import Failure
from backstay.policy._limit_headers import REQUESTS, TOKENS, read_limits
from backstay.policy.ratelimit import (
    DEFAULT_RATE_LIMIT_SETTINGS,
    RateLimitSettings,
    Reservation,
)
from backstay.store.redis import _scripts
from backstay.store.redis._client import RedisConnection
from backstay.store.redis._lean import LeanScript
from backstay.taxonomy import FailureKind

__all__ = ["RedisRateLimiter", "RedisRateLimiterRegistry", "credential_fingerprint"]

_DIMENSION: Final = {REQUESTS: "r", TOKENS: "t"}
# How often a caller held while the fleet's probe discovers the limits asks again (a
# round trip to Redis each time).
HOLD_RECHECK_S: Final = 0.05


def credential_fingerprint(secret: str) -> str:
    """A short, one-way name for an API key: limiters per key without storing the key."""
    return hashlib.sha256(secret.encode()).hexdigest()[:12]


def _arg(value: float | None) -> str:
    return "" if value is None else repr(float(value))


class RedisRateLimiter:
    """A rate limiter whose buckets live in Redis; see the module docstring."""

    learns_answering: Final = True
    """``update_from_headers`` takes the ``Reservation`` the headers answer."""

    def __init__(
        self,
        name: str,
        conn: RedisConnection,
        *,
        settings: RateLimitSettings = DEFAULT_RATE_LIMIT_SETTINGS,
        credential: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        check_name(name, where="RedisRateLimiter.name")
        self.name = name
        self.settings = settings
        self._conn = conn
        self._clock = clock or SYSTEM_CLOCK
        tag = name if credential is None else f"{name}@{credential}"
        self.key = conn.key(f"lim:{tag}")
        self._reserve = LeanScript(_scripts.RESERVE)
        self._block = LeanScript(_scripts.BLOCK)
        self._learn = LeanScript(_scripts.LEARN)

    def _run(self, script: LeanScript, *args: str) -> Any:
        return self._conn.evalsha(script, [self.key], list(args))

    def reservation(self, tokens: float = 1.0) -> Reservation:
        """``reserve``, returning the whole ``Reservation``: hand it back with the headers
        of the response it was made for, and to ``settle`` when its attempt ends. While
        the limits are discovered the fleet's first one is the probe and the others are
        held: ``recheck`` them."""
        return self._reservation(tokens, discover=True)

    async def areservation(self, tokens: float = 1.0) -> Reservation:
        """``reservation`` awaited: the script's round trip does not hold the event loop
        (``RedisConnection.aevalsha``). The gateway makes each request's first one so."""
        args = self._reserve_args(tokens, discover=True)
        raw = await self._conn.aevalsha(self._reserve, [self.key], args)
        return self._reserved(raw, tokens)

    def _reserve_args(self, tokens: float, *, discover: bool) -> list[str | bytes]:
        check_number(tokens, where="tokens")
        s = self.settings
        return [
            repr(float(tokens)),
            _arg(s.requests_per_minute),
            _arg(s.tokens_per_minute),
            repr(s.burst_s),
            repr(float(s.probe_timeout_s)) if discover else "",
        ]

    def _reservation(self, tokens: float, *, discover: bool) -> Reservation:
        args = self._reserve_args(tokens, discover=discover)
        return self._reserved(self._conn.evalsha(self._reserve, [self.key], args), tokens)

    def _reserved(self, raw: bytes | str, tokens: float) -> Reservation:
        parts = (raw.decode() if isinstance(raw, bytes) else str(raw)).split("|")
        wait = max(0.0, float(parts[0]))
        if parts[1] == "held":  # another caller's probe discovers the limits
            return Reservation(wait, 0.0, 0.0, tokens=float(tokens), recheck_s=HOLD_RECHECK_S)
        return Reservation(
            wait, float(parts[1]), float(parts[2]), tokens=float(tokens), probe=parts[3] == "1"
        )

    def reserve(self, tokens: float = 1.0) -> float:
        """Reserve one request and ``tokens`` tokens; the seconds to wait first (placed at
        once, never held: as the in-process limiter's ``reserve``)."""
        return self._reservation(tokens, discover=False).wait_s

    def recheck(self, reservation: Reservation) -> Reservation:
        """A held ``reservation`` asked again: still held, or placed. A placed one stays as
        it is."""
        if reservation.recheck_s is None:
            return reservation
        return self.reservation(reservation.tokens)

    def settle(self, reservation: Reservation) -> None:
        """The probe's attempt ended: discovery is over for the whole fleet."""
        if reservation.probe:
            self._conn.call(lambda client: client.hset(self.key, "found", "1"))

    def observe(self, failure: Failure) -> None:
        """A rate limit with a wait blocks every caller of every machine until then. Any
        failure ends discovery: the provider has answered, or the probe failed."""
        if failure.kind is not FailureKind.RATE_LIMIT:
            self._conn.call(lambda client: client.hset(self.key, "found", "1"))
            return
        wait = failure.retry_after_s
        if wait is None and failure.resets_at is not None:
            wait = max(0.0, (failure.resets_at - self._clock.now()).total_seconds())
        self.block_for(wait or 0.0)

    def block_for(self, seconds: float) -> None:
        """Block every caller for ``seconds`` (at most ``max_block_s``); empty the buckets."""
        check_number(seconds, where="seconds")
        self._run(self._block, repr(min(float(seconds), self.settings.max_block_s)))

    def update_from_headers(
        self, headers: object, *, answering: Reservation | None = None, refused: bool = False
    ) -> None:
        """Learn from the provider's rate-limit headers (unreadable ones are ignored).
        ``answering``: the reservation of the request they answer; its ``remaining`` then
        sets the level, less what every process reserved after it (the provider had not
        counted those). Without it, ``remaining`` only lowers the level."""
        del refused  # no token ratio is learned here (see the module docstring)
        for args in self._learn_args(headers, answering):
            self._conn.evalsha(self._learn, [self.key], args)

    async def aupdate_from_headers(
        self, headers: object, *, answering: Reservation | None = None, refused: bool = False
    ) -> None:
        """``update_from_headers`` awaited (``RedisConnection.aevalsha``), its dimensions'
        scripts sent together. The gateway learns so from each answer."""
        del refused
        calls = [
            self._conn.aevalsha(self._learn, [self.key], args)
            for args in self._learn_args(headers, answering)
        ]
        if calls:
            await asyncio.gather(*calls)

    def _learn_args(
        self, headers: object, answering: Reservation | None
    ) -> list[list[str | bytes]]:
        """The ``LEARN`` script's arguments, one list per dimension the headers tell."""
        limits = read_limits(normalize_headers(headers), self._clock.now())
        s = self.settings
        configured = {REQUESTS: s.requests_per_minute, TOKENS: s.tokens_per_minute}
        calls: list[list[str | bytes]] = []
        for dim, seen in limits.items():
            through = None
            if answering is not None:
                through = (
                    answering.requests_through if dim == REQUESTS else answering.tokens_through
                )
            calls.append(
                [
                    _DIMENSION[dim],
                    _arg(seen.limit),
                    _arg(seen.remaining),
                    _arg(configured[dim]),
                    repr(s.burst_s),
                    _arg(seen.reset_s),
                    repr(s.max_block_s),
                    _arg(through),
                ]
            )
        return calls

    def state(self) -> dict[str, float]:
        """The stored hash as numbers (for reports and tests)."""
        raw = self._conn.call(lambda client: client.hgetall(self.key))
        return {(k.decode() if isinstance(k, bytes) else str(k)): float(v) for k, v in raw.items()}

    def __repr__(self) -> str:
        return f"RedisRateLimiter({self.name!r}, settings={self.settings!r})"


class RedisRateLimiterRegistry:
    """``RateLimiterRegistry``'s lookup (most specific of ``provider/model``,
    ``provider``, ``default``) over shared limiters. Thread-safe enough: two threads
    making one limiter at once make two handles on the same Redis state."""

    def __init__(
        self,
        conn: RedisConnection,
        limits: Mapping[str, RateLimitSettings] | None = None,
        *,
        default: RateLimitSettings = DEFAULT_RATE_LIMIT_SETTINGS,
        clock: Clock | None = None,
    ) -> None:
        self._conn = conn
        self.limits = dict(limits or {})
        self.default = default
        self._clock = clock
        self._limiters: dict[str, RedisRateLimiter] = {}

    def limiter_for(
        self, provider: str, model: str | None = None, *, credential: str | None = None
    ) -> RedisRateLimiter:
        name = provider if model is None else f"{provider}/{model}"
        key = name if credential is None else f"{name}@{credential}"
        found = self._limiters.get(key)
        if found is None:
            settings = self.limits.get(name) or self.limits.get(provider) or self.default
            found = RedisRateLimiter(
                name, self._conn, settings=settings, credential=credential, clock=self._clock
            )
            self._limiters[key] = found
        return found
