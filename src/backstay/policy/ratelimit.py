"""Client-side rate limits: callers of one provider wait their turn instead of failing.

A ``RateLimiter`` holds up to two ``TokenBucket``\\ s — requests and tokens per minute —
and a block. Before each attempt the retry driver calls ``reserve(tokens)``: the limiter
takes one request and ``tokens`` tokens and returns how long to wait. Because a
reservation holds even while its caller waits, concurrent callers queue in order rather
than all going at once.

It learns the provider's limits from two sources:

* ``observe(failure)``: a ``rate_limit`` failure with ``retry_after_s`` (or ``resets_at``)
  blocks every caller of the limiter until then, capped at ``max_block_s``; without a
  wait it empties the buckets. Every caller waits instead of each finding the limit by
  failing, and after the block they resume at the refill rate, not in a herd.
* ``update_from_headers(headers)``: the provider's rate-limit headers. A ``limit`` sizes a
  bucket (a configured rate is a ceiling the headers can only lower; without one, the
  headers' limit is adopted, read as per minute); ``remaining`` lowers the level, never
  raises it — unless the caller hands back the ``Reservation`` the response answers
  (``answering=``): the level is then set to what the provider had left when it counted
  that request, less what this limiter reserved after it. An
  exhausted dimension with a ``reset`` blocks until the reset only when no rate is known
  for it: the reset is when the limit is full again, not when the next request fits,
  which the rate says.

Reservations already handed out are not recalled by a block: their callers learn of it
from their own failure, and re-reserve before their next attempt.

A limiter configured with no limits at all first *discovers* them (``probe_timeout_s``):
the first ``reservation`` is a probe, which goes at once; later ones are *held* — a
provisional wait to be rechecked (``recheck``) every ``HOLD_RECHECK_S`` — until the
limiter hears from the provider (headers, or any failure), the probe's attempt ends
(``settle``), or ``probe_timeout_s`` passes. Then they are placed in the buckets the answer
sized: they go at the provider's pace instead of all at once into a bucket that may be
empty. This happens once per limiter. ``reserve`` never holds (its callers cannot recheck).

Token estimates are corrected by what the provider charges: the limiter learns the ratio
of charged to estimated tokens from the ``remaining`` of successive answers
(``_token_ratio.TokenRatio``, bounded to [0.5, 2]) and reserves ``tokens × ratio``.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from typing import Final

from backstay._checks import check_name, check_number
from backstay.classify._http import normalize_headers
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.policy._limit_headers import REQUESTS, TOKENS, HeaderLimit, read_limits
from backstay.policy._token_ratio import TokenRatio
from backstay.policy.bucket import TokenBucket
from backstay.taxonomy import FailureKind

__all__ = ["LimiterSnapshot", "RateLimitSettings", "RateLimiter", "Reservation"]

# Providers may enforce a per-minute limit over shorter spans (Anthropic: 60 RPM "may be
# enforced as 1 request per second"), so a bucket holds a sixth of a minute, not a minute.
DEFAULT_BURST_S: Final = 10.0
# The longest a rate-limit hint may block every caller: a larger hint is read as this.
DEFAULT_MAX_BLOCK_S: Final = 600.0
# How long a limiter that knows no limits holds callers while its probe is out: long enough
# for a first response's headers, short enough that a probe that never answers costs little.
DEFAULT_PROBE_TIMEOUT_S: Final = 2.0
# How often a held caller asks again: the most a held caller lags behind the probe's answer.
HOLD_RECHECK_S: Final = 0.02
_MINUTE_S: Final = 60.0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RateLimitSettings:
    """One limiter's limits. ``None``: not limited on that dimension until headers say so.

    A bucket refills at ``per_minute / 60`` per second and holds ``burst_s`` seconds of
    refill (at least one unit). ``probe_timeout_s``: with neither limit set, the longest
    the first request (the probe) holds the others while the limits are discovered; 0
    turns discovery off.
    """

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    burst_s: float = DEFAULT_BURST_S
    max_block_s: float = DEFAULT_MAX_BLOCK_S
    probe_timeout_s: float = DEFAULT_PROBE_TIMEOUT_S

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None:
                check_number(value, where=f"RateLimitSettings.{name}", above=True)
        check_number(self.burst_s, where="RateLimitSettings.burst_s", above=True)
        check_number(self.max_block_s, where="RateLimitSettings.max_block_s")
        check_number(self.probe_timeout_s, where="RateLimitSettings.probe_timeout_s")

    def bucket(self, per_minute: float, now: float) -> TokenBucket:
        """A full bucket for ``per_minute`` at ``now``, shaped by these settings."""
        refill = per_minute / _MINUTE_S
        return TokenBucket.full(
            capacity=max(1.0, refill * self.burst_s), refill_per_s=refill, now=now
        )


DEFAULT_RATE_LIMIT_SETTINGS: Final = RateLimitSettings()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LimiterSnapshot:
    """A limiter at monotonic time ``at``: its buckets brought forward to ``at``, whether it
    is still discovering the limits, and the charged-per-estimated token ratio it uses."""

    at: float
    blocked_for_s: float
    requests: TokenBucket | None
    tokens: TokenBucket | None
    discovering: bool = False
    token_ratio: float = 1.0


@dataclasses.dataclass(frozen=True, slots=True)
class Reservation:
    """One reservation: the seconds to wait before its attempt, and the requests and tokens
    (as reserved, and as estimated) the limiter had reserved up to and including it.

    ``tokens``: the estimate asked for. ``recheck_s`` is set while the reservation is held
    (not yet placed: ``wait_s`` is what is left of the hold at most); ``probe`` marks the
    request a limiter discovering its limits lets go first."""

    wait_s: float
    requests_through: float
    tokens_through: float
    _: dataclasses.KW_ONLY
    estimated_through: float = 0.0
    tokens: float = 0.0
    recheck_s: float | None = None
    probe: bool = False


class RateLimiter:
    """Requests and tokens per minute shared by every caller that holds it. Thread-safe.

    Implements ``RateLimiterLike``. ``requests_per_minute`` and ``tokens_per_minute`` may
    both be ``None``: the limiter then only honours rate-limit failures and headers.
    """

    __slots__ = (
        "_blocked_until",
        "_clock",
        "_discovering",
        "_estimated",
        "_lock",
        "_probe_until",
        "_ratio",
        "_requested",
        "_requests",
        "_tokened",
        "_tokens",
        "name",
        "settings",
    )

    def __init__(
        self,
        name: str,
        *,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        burst_s: float = DEFAULT_BURST_S,
        max_block_s: float = DEFAULT_MAX_BLOCK_S,
        probe_timeout_s: float = DEFAULT_PROBE_TIMEOUT_S,
        clock: Clock | None = None,
    ) -> None:
        check_name(name, where="RateLimiter.name")
        settings = RateLimitSettings(
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            burst_s=burst_s,
            max_block_s=max_block_s,
            probe_timeout_s=probe_timeout_s,
        )
        self.name = name
        self.settings = settings
        self._clock = clock or SYSTEM_CLOCK
        self._lock = threading.Lock()
        self._blocked_until = -math.inf
        self._requested = 0.0  # requests and tokens reserved so far, for ``Reservation``
        self._tokened = 0.0
        self._estimated = 0.0
        self._ratio = TokenRatio()
        now = self._clock.monotonic()
        rpm, tpm = settings.requests_per_minute, settings.tokens_per_minute
        self._discovering = rpm is None and tpm is None and settings.probe_timeout_s > 0.0
        self._probe_until: float | None = None
        self._requests = None if rpm is None else settings.bucket(rpm, now)
        self._tokens = None if tpm is None else settings.bucket(tpm, now)

    @classmethod
    def from_settings(
        cls, name: str, settings: RateLimitSettings, *, clock: Clock | None = None
    ) -> RateLimiter:
        if not isinstance(settings, RateLimitSettings):
            raise ConfigError(
                f"must be a RateLimitSettings, got {type(settings).__name__}",
                where="RateLimiter.settings",
            )
        return cls(
            name,
            requests_per_minute=settings.requests_per_minute,
            tokens_per_minute=settings.tokens_per_minute,
            burst_s=settings.burst_s,
            max_block_s=settings.max_block_s,
            probe_timeout_s=settings.probe_timeout_s,
            clock=clock,
        )

    def reserve(self, tokens: float = 1.0) -> float:
        """Reserve one request and ``tokens`` tokens; the seconds to wait before the attempt.

        The reservation is made whatever the wait: later callers queue behind it. Pass the
        expected token count of the request (prompt and output) to pace by tokens. Never
        held, since its caller cannot recheck: it is placed with what is known now.
        """
        check_number(tokens, where="tokens")
        with self._lock:
            return self._place(self._clock.monotonic(), tokens).wait_s

    def reservation(self, tokens: float = 1.0) -> Reservation:
        """``reserve``, returning the whole ``Reservation``: hand it back with the headers
        of the response to the request it was made for (``update_from_headers``), and to
        ``settle`` when its attempt ends. While the limits are being discovered the first
        one is the probe and the others are held: ``recheck`` them."""
        check_number(tokens, where="tokens")
        with self._lock:
            now = self._clock.monotonic()
            if self._discovering:
                if self._probe_until is None:
                    self._probe_until = now + self.settings.probe_timeout_s
                    return self._place(now, tokens, probe=True)
                if now < self._probe_until:
                    return self._held(now, tokens)
                self._discovering = False
            return self._place(now, tokens)

    def recheck(self, reservation: Reservation) -> Reservation:
        """A held ``reservation`` as of now: still held, with what is left of the probe's
        time (never more than before), or placed with a final wait. A placed one is
        returned as it is."""
        if reservation.recheck_s is None:
            return reservation
        with self._lock:
            now = self._clock.monotonic()
            until = self._probe_until
            if self._discovering and until is not None and now < until:
                return self._held(now, reservation.tokens)
            self._discovering = False
            return self._place(now, reservation.tokens)

    def settle(self, reservation: Reservation) -> None:
        """The attempt made under ``reservation`` ended: the probe's end ends discovery
        (whatever it taught the limiter is learned by now)."""
        if reservation.probe:
            with self._lock:
                self._discovering = False

    def _place(self, now: float, tokens: float, *, probe: bool = False) -> Reservation:
        """Take one request and ``tokens`` (times the learned ratio). Holds the lock."""
        charged = tokens * self._ratio.ratio
        wait = max(0.0, self._blocked_until - now)
        if self._requests is not None:
            self._requests, waited = self._requests.take(now, 1.0)
            wait = max(wait, waited)
        if self._tokens is not None:
            self._tokens, waited = self._tokens.take(now, charged)
            wait = max(wait, waited)
        self._requested += 1.0
        self._tokened += charged
        self._estimated += tokens
        return Reservation(
            wait,
            self._requested,
            self._tokened,
            estimated_through=self._estimated,
            tokens=tokens,
            probe=probe,
        )

    def _held(self, now: float, tokens: float) -> Reservation:
        """A reservation held until the probe's answer (or its time is up). Holds the lock."""
        until = self._probe_until if self._probe_until is not None else now
        return Reservation(
            until - now,
            self._requested,
            self._tokened,
            estimated_through=self._estimated,
            tokens=tokens,
            recheck_s=HOLD_RECHECK_S,
        )

    def observe(self, failure: Failure) -> None:
        """Learn from a failure: a rate limit blocks every caller until its wait is over.
        Any failure ends discovery: the provider has answered, or the probe failed."""
        with self._lock:
            self._discovering = False
        if failure.kind is not FailureKind.RATE_LIMIT:
            return
        wait = failure.retry_after_s
        if wait is None and failure.resets_at is not None:
            wait = max(0.0, (failure.resets_at - self._clock.now()).total_seconds())
        self.block_for(wait or 0.0)

    def block_for(self, seconds: float) -> None:
        """Block every caller for ``seconds`` (capped at ``max_block_s``) and empty the
        buckets, so that callers resume at the refill rate afterwards."""
        check_number(seconds, where="seconds")
        seconds = min(seconds, self.settings.max_block_s)
        with self._lock:
            now = self._clock.monotonic()
            until = now + seconds
            self._blocked_until = max(self._blocked_until, until)
            if self._requests is not None:
                self._requests = self._requests.blocked(now, until)
            if self._tokens is not None:
                self._tokens = self._tokens.blocked(now, until)

    def update_from_headers(
        self, headers: object, *, answering: Reservation | None = None, refused: bool = False
    ) -> None:
        """Feed the provider's rate-limit headers (any header shape; unreadable ones are
        ignored): Anthropic ``anthropic-ratelimit-*`` and OpenAI ``x-ratelimit-*``.

        ``answering``: the reservation of the request these headers answer. The provider's
        ``remaining`` then sets the level, up or down, less what was reserved after that
        request (the provider had not counted it yet). It is read as of now, the refill
        during the call not counted: a little low, never high. Without a reservation,
        ``remaining`` can only lower the level. Any headers end discovery.

        ``refused``: the response refused the request (a failure status): the provider is
        taken not to have charged its tokens when the limiter learns its token ratio."""
        limits = read_limits(normalize_headers(headers), self._clock.now())
        settings = self.settings
        with self._lock:
            self._discovering = False
            if not limits:
                return
            now = self._clock.monotonic()
            if REQUESTS in limits:
                after = None if answering is None else self._requested - answering.requests_through
                self._requests = self._learn(
                    self._requests,
                    settings.requests_per_minute,
                    limits[REQUESTS],
                    now,
                    after=after,
                )
            if TOKENS in limits:
                seen = limits[TOKENS]
                if answering is not None and seen.remaining is not None and seen.limit:
                    self._ratio = self._ratio.answered(
                        estimated_through=answering.estimated_through,
                        remaining=seen.remaining,
                        limit=seen.limit,
                        at=now,
                        refused=answering.tokens if refused else 0.0,
                    )
                after = None if answering is None else self._tokened - answering.tokens_through
                self._tokens = self._learn(
                    self._tokens,
                    settings.tokens_per_minute,
                    limits[TOKENS],
                    now,
                    after=after,
                )

    def _learn(
        self,
        bucket: TokenBucket | None,
        configured: float | None,
        seen: HeaderLimit,
        now: float,
        *,
        after: float | None,
    ) -> TokenBucket | None:
        """One dimension's bucket after the headers ``seen`` at ``now``; ``after``: what was
        reserved after the answered request (``None``: not known). Holds the lock."""
        per_minute = configured
        if seen.limit is not None and seen.limit > 0.0:
            per_minute = seen.limit if per_minute is None else min(per_minute, seen.limit)
        if per_minute is not None:
            shape = self.settings.bucket(per_minute, now)
            if bucket is None:
                bucket = shape.blocked(now, self._blocked_until) if self._blocked(now) else shape
            elif (bucket.capacity, bucket.refill_per_s) != (shape.capacity, shape.refill_per_s):
                bucket = bucket.resized(
                    now, capacity=shape.capacity, refill_per_s=shape.refill_per_s
                )
            if seen.remaining is not None and after is not None:
                bucket = bucket.synced(now, remaining=seen.remaining, since=now, outstanding=after)
            elif seen.remaining is not None:
                bucket = bucket.capped(now, seen.remaining)
        if bucket is None and seen.exhausted and seen.reset_s is not None:
            # Without a rate, the reset is all there is to go by. With one, the bucket
            # capped at zero above paces the next request: both providers' reset is the time
            # until the limit is *fully* replenished (60 s for an empty per-minute bucket),
            # while capacity comes back continuously, one request every 60 / limit seconds.
            until = now + min(seen.reset_s, self.settings.max_block_s)
            self._blocked_until = max(self._blocked_until, until)
        return bucket

    def _blocked(self, now: float) -> bool:
        return self._blocked_until > now

    def snapshot(self) -> LimiterSnapshot:
        """The block and both buckets now (for reports and tests)."""
        with self._lock:
            now = self._clock.monotonic()
            return LimiterSnapshot(
                at=now,
                blocked_for_s=max(0.0, self._blocked_until - now),
                requests=None if self._requests is None else self._requests.refilled(now),
                tokens=None if self._tokens is None else self._tokens.refilled(now),
                discovering=self._discovering
                and (self._probe_until is None or now < self._probe_until),
                token_ratio=self._ratio.ratio,
            )

    def __repr__(self) -> str:
        return f"RateLimiter({self.name!r}, settings={self.settings!r})"
