"""``Proxy``: the request handler. Each client request is routed, its key kept out of
every text (``register_secret``), and its upstream attempts run by ``backstay.call.acall``
under the gateway's ``RetryPolicy`` and the circuit breaker of its (provider, model); the
client gets the first answer that did not fail, else the last upstream answer unchanged,
else (no upstream answer at all) an error in its provider's format.

One ``Idempotency-Key`` per client request is sent on every attempt (``headers``); each
attempt first waits its turn at the rate limiter of its provider and model (``limits``).
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from backstay.breaker import BreakerRegistry
from backstay.call import acall
from backstay.classify import classify
from backstay.errors import CircuitOpen
from backstay.events import BUS
from backstay.failure import Failure
from backstay.gateway.attempt import (
    Answer,
    OpenStream,
    Request,
    StreamTooLarge,
    UpstreamFailed,
    attempt,
)
from backstay.gateway.events import RequestRetried
from backstay.gateway.headers import (
    client_keys,
    downstream_headers,
    idempotency_key,
    upstream_headers,
)
from backstay.gateway.limits import GatewayLimits, paced_attempt
from backstay.gateway.routes import Route, route
from backstay.gateway.settings import TOKEN_HEADER, GatewaySettings
from backstay.gateway.wire_errors import GatewayError, gateway_error
from backstay.redact import redact, register_secret
from backstay.taxonomy import FailureKind

if TYPE_CHECKING:
    import aiohttp
    from aiohttp import web
    from multidict import CIMultiDict

__all__ = ["Proxy"]

# Distinct client keys registered for redaction; past this many, keys are still forwarded
# but no longer added (the pattern-based redaction still covers the providers' key shapes).
_MAX_REGISTERED_KEYS: Final = 1024


class _Tally:
    """One client request's attempts so far, and the last upstream answer that failed."""

    __slots__ = ("attempts", "last")

    def __init__(self) -> None:
        self.attempts = 0
        self.last: UpstreamFailed | None = None


class Proxy:
    """Forwards requests under ``settings`` through ``session``; breakers from ``breakers``."""

    def __init__(
        self,
        settings: GatewaySettings,
        session: aiohttp.ClientSession,
        breakers: BreakerRegistry,
        *,
        limits: GatewayLimits | None = None,
    ) -> None:
        self.settings = settings
        self._session = session
        self._breakers = breakers
        self._limits = limits if limits is not None else GatewayLimits()
        self._registered: set[str] = set()
        self.active = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer one client request. A client that disconnects cancels it (the server runs
        with handler cancellation): no attempt or wait outlives the client."""
        self.active += 1
        try:
            return await self._handle(request)
        finally:
            self.active -= 1

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        found = route(request.method, request.path, request.headers, body)
        if not self._admitted(request):
            provider = None if found is None else found.provider
            return _error(gateway_error(provider, 401, f"missing or wrong {TOKEN_HEADER}"))
        # Only an admitted request's keys: a stranger cannot fill the redaction table.
        self._register(client_keys(request.headers, request.query_string))
        if found is None:
            message = f"{request.method} {request.path} is not a provider endpoint it serves"
            return _error(gateway_error(None, 404, message))
        key = idempotency_key(request.method, found.provider, request.headers)
        upstream = Request(
            method=request.method,
            url=self.settings.upstreams.url_for(found.provider) + request.raw_path,
            headers=tuple(upstream_headers(request.headers.items(), key)),
            body=body,
            provider=found.provider,
        )
        return await self._forward(request, found, upstream, key)

    def _admitted(self, request: web.Request) -> bool:
        token = self.settings.token
        if token is None:
            return True
        given = request.headers.get(TOKEN_HEADER, "")
        return hmac.compare_digest(given.encode(), token.encode())

    def _register(self, keys: list[str]) -> None:
        for key in keys:
            if key not in self._registered and len(self._registered) < _MAX_REGISTERED_KEYS:
                self._registered.add(key)
                register_secret(key)

    async def _one(self, upstream: Request, tally: _Tally) -> Answer | OpenStream:
        tally.attempts += 1
        settings = self.settings
        try:
            return await attempt(
                self._session,
                upstream,
                buffer_streams=settings.buffer_streams,
                max_buffer_bytes=settings.max_buffer_bytes,
                peek_bytes=settings.peek_bytes,
            )
        except UpstreamFailed as failed:
            tally.last = failed
            raise

    async def _forward(
        self, request: web.Request, found: Route, upstream: Request, key: str | None
    ) -> web.StreamResponse:
        tally = _Tally()
        started = time.monotonic()
        breaker = self._breakers.breaker_for((found.provider, found.model))
        failure: Failure | None = None
        outcome = "succeeded"
        try:
            # Each attempt waits its turn at the provider's rate limiter (``limits``).
            pacer = self._limits.pacer(found, upstream.method, upstream.body)
            result: Answer | OpenStream | GatewayError = await acall(
                paced_attempt,
                pacer,
                self._one,
                upstream,
                tally,
                policy=self.settings.policy,
                breaker=breaker,
                limiter=pacer,
                operation=f"gateway:{found.provider}/{found.model}",
            )
        except UpstreamFailed as failed:
            result, failure, outcome = failed.answer, failed.failure, "gave_up"
        except CircuitOpen as err:
            outcome = "circuit_open"
            if tally.last is not None:  # opened by this request's own failures
                result, failure = tally.last.answer, tally.last.failure
            else:
                result = gateway_error(
                    found.provider, 503, redact(str(err)), retry_after_s=err.retry_after_s
                )
        except StreamTooLarge as err:
            result, outcome = gateway_error(found.provider, 502, str(err)), "gave_up"
        except Exception as exc:  # noqa: BLE001 - a transport failure, answered as an error
            failure, outcome = classify(exc, provider=found.provider), "gave_up"
            status = 504 if failure.kind is FailureKind.TIMEOUT else 502
            message = f"the upstream failed: {failure.kind}: {failure.message}"
            result = gateway_error(found.provider, status, message)
        status = result.status
        if tally.attempts > 1 or outcome == "circuit_open":
            elapsed = time.monotonic() - started
            _report(found, self.settings.policy.name, tally, status, outcome, failure, key, elapsed)
        if isinstance(result, GatewayError):
            return _error(result)
        if isinstance(result, OpenStream):
            return await _pipe(request, result, tally.attempts)
        return _answer(result, tally.attempts)


def _report(  # noqa: PLR0917 - one event's fields
    found: Route,
    policy: str,
    tally: _Tally,
    status: int,
    outcome: str,
    failure: Failure | None,
    key: str | None,
    elapsed_s: float,
) -> None:
    if tally.last is not None and failure is None:
        failure = tally.last.failure
    if BUS.wants(RequestRetried.level):
        BUS.emit(
            RequestRetried(
                operation=f"gateway:{found.provider}/{found.model}",
                policy=policy,
                provider=found.provider,
                model=found.model,
                endpoint=found.endpoint,
                attempts=tally.attempts,
                status=status,
                outcome=outcome,
                failure=failure,
                idempotency_key=key,
                elapsed_s=elapsed_s,
            )
        )


def _error(error: GatewayError) -> web.Response:
    from aiohttp import web  # noqa: PLC0415 - loaded with the server

    return web.Response(status=error.status, body=error.body, headers=_multi(error.headers))


def _answer(answer: Answer, attempts: int) -> web.Response:
    from aiohttp import web  # noqa: PLC0415

    headers = _multi(downstream_headers(answer.headers, attempts))
    return web.Response(status=answer.status, body=answer.body, headers=headers)


async def _pipe(request: web.Request, stream: OpenStream, attempts: int) -> web.StreamResponse:
    """Forward an opened stream: its first bytes, then the rest as it comes. A failure
    after the first byte ends the client's connection (it cannot be retried any more)."""
    import aiohttp  # noqa: PLC0415
    from aiohttp import web  # noqa: PLC0415

    upstream = stream.response
    try:
        out = web.StreamResponse(
            status=stream.status, headers=_multi(downstream_headers(stream.headers, attempts))
        )
        await out.prepare(request)
        await out.write(stream.first)
        try:
            async for chunk in upstream.content.iter_any():
                await out.write(chunk)
        except (TimeoutError, aiohttp.ClientError, OSError):
            # Cut, not ended: the client must see the stream fail, as it did upstream.
            if request.transport is not None:
                request.transport.abort()
            return out
        await out.write_eof()
        return out
    finally:
        upstream.release()


def _multi(headers: Iterable[tuple[str, str]]) -> CIMultiDict[str]:
    from multidict import CIMultiDict  # noqa: PLC0415 - aiohttp's own dependency

    return CIMultiDict(headers)
