"""The gateway's rate limits: every request it forwards waits its turn at the limiter of
its provider and model, the limiter API tasks and CLI sessions of that provider use too
(``backstay.policy.limit_keys``).

``GatewayLimits`` hands out one ``RequestPacer`` per client request over the limiter
``provider/model`` of a ``LimiterRegistryLike``: an in-process ``RateLimiterRegistry`` by
default, or the one of a store (``backstay gateway --store redis://…``: one limit held by
every gateway process on that Redis). The pacer is the retry driver's limiter for the
request (``backstay.policy._paced.PacedRequest``): before each attempt it reserves one
request and the body's estimated tokens and the driver sleeps the wait; each upstream
answer's rate-limit headers (``anthropic-ratelimit-*``, ``x-ratelimit-*``) teach the limiter
the provider's limit, and what the provider has left lowers its level, never raises it (as
the engine reads them, ``backstay.engine.pacing``); a 429 blocks the limiter for its
``Retry-After``. An attempt that had to wait is reported with ``RequestPaced``
(``request.paced``, INFO) as it starts.

Why never raises: at the limit, the provider's ``remaining`` is a whole number near zero,
read a moment after the provider counted. Setting the level from it (``answering=``, as
``backstay.integrations`` does) drops up to a request's worth of refill per answer: two
gateways on one Redis, 300 requests at 1,200 a minute from a used-up bucket, took 2.55 ×
M / R that way, and 0.97 × M / R (no 429) this way (``bench/gateway.py``).

Model listings and token counts are not paced: providers limit them apart, if at all.

A limiter that can reserve without holding the event loop (``areservation``: a Redis
limiter on a plain ``redis://`` store) makes each request's first reservation so
(``GatewayLimits.prepared``): the script's round trip is awaited while the gateway serves
the other requests, then handed to the retry driver as its first reservation.

A limit of one API key (``anthropic#<fingerprint>``, ``anthropic/<model>#<fingerprint>`` in
``retry.rate_limits``; ``backstay.policy.limit_keys``) paces the requests sent with that
key — a run's real key, else the client's own — at a limiter of their own,
``anthropic#<fingerprint>/<model>``; the registry holds those limits under the names
``credential_limits`` gives them. Only the fingerprint is ever named.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import ClassVar, Final, ParamSpec

from backstay.events import BUS, Event
from backstay.gateway.attempt import Answer, OpenStream, UpstreamFailed
from backstay.gateway.routes import ANY_MODEL, NOT_JSON, Route
from backstay.policy._paced import (
    CHARS_PER_TOKEN,
    PacedRequest,
    estimate_parsed,
    estimate_tokens,
)
from backstay.policy.limit_keys import KEY_MARK, key_limit
from backstay.policy.limiters import RateLimiterRegistry
from backstay.policy.protocols import LimiterRegistryLike, RateLimiterLike, ReservationLike
from backstay.policy.ratelimit import RateLimiter

__all__ = ["GatewayLimits", "RequestPaced", "RequestPacer", "estimate_body", "paced_attempt"]

_UNPACED_SUFFIXES: Final = ("/count_tokens", ":countTokens")
# In every rate-limit header's name: anthropic-ratelimit-*, x-ratelimit-*.
_RATE_LIMIT: Final = "ratelimit"

P = ParamSpec("P")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RequestPaced(Event):
    """An upstream attempt of a request waited ``wait_s`` seconds at the rate limiter
    ``limiter`` (``provider/model``) before it was sent. No header, key or body."""

    name: ClassVar[str] = "request.paced"
    level: ClassVar[int] = logging.INFO
    provider: str
    model: str
    endpoint: str
    limiter: str
    attempt: int
    wait_s: float


class RequestPacer(PacedRequest):
    """One client request's view of its provider's limiter (a ``ReservingLimiterLike`` for
    the retry driver); it remembers when a wait began, to report it."""

    __slots__ = ("_attempts", "_ready", "_waiting_since", "operation", "route")

    def __init__(
        self, limiter: RateLimiterLike, tokens: float, route: Route, operation: str | None = None
    ) -> None:
        super().__init__(limiter, tokens)
        self.route = route
        # What its ``request.paced`` is told under: the run's task, else the gateway's own.
        self.operation = operation or f"gateway:{route.provider}/{route.model}"
        self._waiting_since: float | None = None
        self._attempts = 0
        self._ready: ReservationLike | None = None

    async def prepare(self) -> None:
        """Make the first reservation now, awaited, when the limiter can
        (``areservation``); ``reservation`` hands it to the driver once."""
        make = getattr(self.limiter, "areservation", None)
        if make is not None and self._reserving is not None:
            self._ready = await make(self.tokens)

    def _asked(self, wait_s: float) -> None:
        if wait_s > 0.0 and self._waiting_since is None:
            self._waiting_since = time.monotonic()

    def reserve(self, tokens: float = 1.0) -> float:
        wait = super().reserve(tokens)
        self._asked(wait)
        return wait

    def reservation(self, tokens: float = 1.0) -> ReservationLike:
        ready, self._ready = self._ready, None
        if ready is not None:
            self._reservation = ready
            reservation = ready
        else:
            reservation = super().reservation(tokens)
        self._asked(reservation.wait_s)
        return reservation

    def attempt_starts(self) -> None:
        """Called as an attempt is sent: report the wait before it, if it waited."""
        self._attempts += 1
        since, self._waiting_since = self._waiting_since, None
        if since is None or not BUS.wants(RequestPaced.level):
            return
        found = self.route
        BUS.emit(
            RequestPaced(
                operation=self.operation,
                provider=found.provider,
                model=found.model,
                endpoint=found.endpoint,
                limiter=self.name,
                attempt=self._attempts,
                wait_s=time.monotonic() - since,
            )
        )

    def answered(self, headers: Iterable[tuple[str, str]], *, refused: bool) -> None:
        """The upstream answer's rate-limit headers, for the limiter to learn the limit
        from and lower its level to what is left (see the module docstring); ``refused``:
        the answer is a failure. An answer without any teaches nothing (the attempt's end,
        which the driver reports, ends a limiter's discovery)."""
        limits = _rate_limits(headers)
        if not limits:
            return
        update = getattr(self.limiter, "update_from_headers", None)
        if update is None:
            return
        if isinstance(self.limiter, RateLimiter) or getattr(
            self.limiter, "learns_answering", False
        ):
            update(limits, refused=refused)
        else:
            update(limits)

    async def aanswered(self, headers: Iterable[tuple[str, str]], *, refused: bool) -> None:
        """``answered``, awaited where the limiter can learn so (``aupdate_from_headers``:
        a Redis limiter on a plain ``redis://`` store), so the gateway serves the other
        requests meanwhile."""
        learn = getattr(self.limiter, "aupdate_from_headers", None)
        if learn is None:
            self.answered(headers, refused=refused)
            return
        limits = _rate_limits(headers)
        if limits:
            await learn(limits, refused=refused)


def _rate_limits(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {name: value for name, value in headers if _RATE_LIMIT in name.lower()}


class GatewayLimits:
    """The limiters a gateway paces with: ``registry`` (default: a fresh in-process
    ``RateLimiterRegistry`` that learns every provider's limits from its headers); the
    limits of API keys among its ``limits`` (named by ``credential_limits``) give those
    keys limiters of their own."""

    __slots__ = ("_keyed", "registry")

    def __init__(self, registry: LimiterRegistryLike | None = None) -> None:
        self.registry: LimiterRegistryLike = (
            registry if registry is not None else RateLimiterRegistry()
        )
        limits = getattr(self.registry, "limits", None) or {}
        # The names of keyed limits (``anthropic#<fingerprint>[/<model>]``).
        self._keyed = frozenset(name for name in limits if KEY_MARK in name)

    def limiter(self, found: Route, credential: str | None = None) -> RateLimiterLike:
        """The limiter of a request on ``found`` sent with ``credential``: its key's own
        when a limit of that key is configured, else its provider's and model's."""
        if credential and self._keyed:
            keyed = key_limit(
                self._keyed, provider=found.provider, model=found.model, credential=credential
            )
            if keyed is not None:
                return self.registry.limiter_for(keyed, found.model)
        return self.registry.limiter_for(found.provider, found.model)

    def pacer(
        self,
        found: Route,
        method: str,
        body: bytes,
        operation: str | None = None,
        credential: str | None = None,
        *,
        parsed: object = None,
    ) -> RequestPacer | None:
        """The pacer of one request on ``found`` (its events told under ``operation``,
        default the gateway's own) sent with the API key ``credential``; ``None`` for one
        not paced (a listing, a token count). ``parsed``: ``body`` as ``routes.body_json``
        parsed it, when the caller has it (else it is parsed here)."""
        if method != "POST" or found.model == ANY_MODEL:
            return None
        if found.endpoint.endswith(_UNPACED_SUFFIXES):
            return None
        limiter = self.limiter(found, credential)
        tokens = estimate_tokens(body) if parsed is None else estimate_body(body, parsed)
        return RequestPacer(limiter, tokens, found, operation)

    async def prepared(
        self,
        found: Route,
        method: str,
        body: bytes,
        operation: str | None = None,
        credential: str | None = None,
        *,
        parsed: object = None,
    ) -> RequestPacer | None:
        """``pacer``, its first reservation made (``RequestPacer.prepare``)."""
        pacer = self.pacer(found, method, body, operation, credential, parsed=parsed)
        if pacer is not None:
            await pacer.prepare()
        return pacer


def estimate_body(body: bytes, parsed: object, *, output: bool = True) -> float:
    """``estimate_tokens(body)`` from ``parsed``, the body as ``routes.body_json`` gave it."""
    if not body:
        return 0.0
    if parsed is NOT_JSON:
        return float(len(body)) / CHARS_PER_TOKEN
    return estimate_parsed(parsed, output=output)


async def paced_attempt(
    pacer: RequestPacer | None,
    one: Callable[P, Awaitable[Answer | OpenStream]],
    *args: P.args,
    **kwargs: P.kwargs,
) -> Answer | OpenStream:
    """One upstream attempt ``one(*args)``, told to ``pacer`` (if any): its start, then the
    rate-limit headers of its answer, failed or not. The retry driver has already slept the
    pacer's wait before calling this."""
    if pacer is None:
        return await one(*args, **kwargs)
    pacer.attempt_starts()
    try:
        result = await one(*args, **kwargs)
    except UpstreamFailed as failed:
        await pacer.aanswered(failed.answer.headers, refused=True)
        raise
    await pacer.aanswered(result.headers, refused=False)
    return result
