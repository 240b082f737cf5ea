"""``RetryTransport`` / ``AsyncRetryTransport``: backstay's retries inside any httpx client.

Wrap the transport an ``httpx.Client`` (or ``httpx2.Client``: the fork the anthropic,
openai and google-genai SDKs now use) sends through::

    transport = RetryTransport(httpx2.HTTPTransport(), policy="standard", breaker=breaker)
    client = httpx2.Client(transport=transport)

Each request then runs under ``backstay.call``'s machinery, per request:

* the rate limiter is asked first, for one request and the request's estimated tokens
  (its text at about four characters a token, plus its output limit), and learns from
  every response's rate-limit headers, read against the reservation they answer; the
  circuit breaker gives a permit, the retry budget is charged for each retry;
* a transport error is classified (``backstay.classify``), a response with status >= 400
  by ``classify_response`` (body, ``x-should-retry``, ``Retry-After`` and the providers'
  own wait hints); the policy decides whether and when to retry;
* only a request whose body can be sent again is retried (bytes in memory, as the SDKs
  send); a streamed upload gets exactly one attempt;
* every attempt of one request carries the same ``Idempotency-Key`` (set unless the
  request has one; ``idempotency_header=None`` leaves requests alone);
* when the policy gives up on a response, the last response is returned as it came (the
  SDK raises its own error for it, as without backstay); when it gives up on a transport
  error, that error propagates. ``CircuitOpen`` / ``RetryBudgetExhausted`` are raised when
  backstay refuses to send at all.

A 200 response is returned at once: what happens inside its body (an error event in a
stream) is the SDK's to report, since part of it may already have been delivered.

Both classes take any transport of either library (they only call ``handle_request`` /
``handle_async_request``, ``close`` / ``aclose``), and need neither library themselves.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from backstay.call import acall, call
from backstay.classify import classify_response
from backstay.clock import Clock
from backstay.failure import Failure
from backstay.integrations._paced import _Paced, estimate_tokens
from backstay.policy.protocols import CircuitBreakerLike, RateLimiterLike, RetryBudgetLike
from backstay.policy.registry import PolicySpec, resolve_policy
from backstay.policy.retry import RetryPolicy

__all__ = ["DEFAULT_IDEMPOTENCY_HEADER", "AsyncRetryTransport", "RetryTransport"]

DEFAULT_IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
_FIRST_FAILING_STATUS: Final = 400


class _FailedResponse(Exception):
    """An attempt's response that shows a failure: ``classify`` reads ``failure``."""

    def __init__(self, failure: Failure, response: Any) -> None:
        self.failure = failure
        self.response = response
        super().__init__(str(failure))


def _replayable(request: Any) -> bool:
    """Whether the request's body is in memory (httpx raises ``RequestNotRead`` otherwise)."""
    try:
        request.content  # noqa: B018 - reading it is the test
    except Exception:  # noqa: BLE001 - RequestNotRead of httpx or httpx2
        return False
    return True


class _Core:
    """What both transports share: settings, the request's stamp, reading a failure."""

    def __init__(
        self,
        transport: Any,
        *,
        policy: PolicySpec,
        breaker: CircuitBreakerLike | None,
        budget: RetryBudgetLike | None,
        limiter: RateLimiterLike | None,
        clock: Clock | None,
        provider: str | None,
        operation: str,
        idempotency_header: str | None,
    ) -> None:
        self.transport = transport
        self.policy = policy
        self.breaker = breaker
        self.budget = budget
        self.limiter = limiter
        self.clock = clock
        self.provider = provider
        self.operation = operation
        self.idempotency_header = idempotency_header
        resolve_policy(policy, None)  # an unknown policy name fails here, not mid-request

    def prepare(self, request: Any) -> tuple[RetryPolicy, _Paced | None]:
        """Stamp the request's idempotency key; the policy it is sent under (one attempt
        when its body cannot be sent again) and its view of the rate limiter."""
        header = self.idempotency_header
        if header and header not in request.headers:
            request.headers[header] = uuid.uuid4().hex
        policy = resolve_policy(self.policy, None)
        replayable = _replayable(request)
        paced = None
        if self.limiter is not None:
            tokens = estimate_tokens(request.content) if replayable else 0.0
            paced = _Paced(self.limiter, tokens)
        if replayable:
            return policy, paced
        return policy.derive(name=f"{policy.name}-no-replay", max_attempts=1), paced

    @staticmethod
    def observe(response: Any, paced: _Paced | None) -> bool:
        """Feed the limiter the response's headers; whether the response shows a failure."""
        failing = int(response.status_code) >= _FIRST_FAILING_STATUS
        if paced is not None:
            paced.update_from_headers(response.headers, refused=failing)
        return failing

    def failed(self, request: Any, response: Any, raw: bytes) -> _FailedResponse:
        """The failure ``response`` (whose body was read as ``raw``) shows, carrying a copy
        of the response that can still be read."""
        failure = classify_response(
            int(response.status_code), response.headers, raw, provider=self.provider
        )
        copy = type(response)(
            response.status_code,
            headers=response.headers,
            content=raw,
            request=request,
            extensions=response.extensions,
        )
        return _FailedResponse(failure, copy)


class RetryTransport:
    """A sync transport that sends through ``transport`` under a backstay policy; see the
    module docstring. ``provider`` (``"anthropic"``, ``"openai"``, ``"gemini"``) helps
    classify bodies that do not say whose they are; ``operation`` names the calls in
    events."""

    def __init__(
        self,
        transport: Any,
        *,
        policy: PolicySpec = None,
        breaker: CircuitBreakerLike | None = None,
        budget: RetryBudgetLike | None = None,
        limiter: RateLimiterLike | None = None,
        clock: Clock | None = None,
        provider: str | None = None,
        operation: str = "http",
        idempotency_header: str | None = DEFAULT_IDEMPOTENCY_HEADER,
    ) -> None:
        self._core = _Core(
            transport,
            policy=policy,
            breaker=breaker,
            budget=budget,
            limiter=limiter,
            clock=clock,
            provider=provider,
            operation=operation,
            idempotency_header=idempotency_header,
        )

    def _attempt(self, request: Any, paced: _Paced | None) -> Any:
        core = self._core
        response = core.transport.handle_request(request)
        if not core.observe(response, paced):
            return response
        try:
            raw = b"".join(response.iter_raw())
        finally:
            response.close()
        raise core.failed(request, response, raw)

    def handle_request(self, request: Any) -> Any:
        core = self._core
        policy, paced = core.prepare(request)
        try:
            return call(
                self._attempt,
                request,
                paced,
                policy=policy,
                operation=core.operation,
                breaker=core.breaker,
                budget=core.budget,
                limiter=paced,
                clock=core.clock,
            )
        except _FailedResponse as given_up:
            return given_up.response

    def close(self) -> None:
        self._core.transport.close()

    def __enter__(self) -> RetryTransport:
        self._core.transport.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._core.transport.__exit__(*exc_info)


class AsyncRetryTransport:
    """``RetryTransport`` for an ``AsyncClient``: the same settings and behaviour."""

    def __init__(
        self,
        transport: Any,
        *,
        policy: PolicySpec = None,
        breaker: CircuitBreakerLike | None = None,
        budget: RetryBudgetLike | None = None,
        limiter: RateLimiterLike | None = None,
        clock: Clock | None = None,
        provider: str | None = None,
        operation: str = "http",
        idempotency_header: str | None = DEFAULT_IDEMPOTENCY_HEADER,
    ) -> None:
        self._core = _Core(
            transport,
            policy=policy,
            breaker=breaker,
            budget=budget,
            limiter=limiter,
            clock=clock,
            provider=provider,
            operation=operation,
            idempotency_header=idempotency_header,
        )

    async def _attempt(self, request: Any, paced: _Paced | None) -> Any:
        core = self._core
        response = await core.transport.handle_async_request(request)
        if not core.observe(response, paced):
            return response
        try:
            raw = b"".join([chunk async for chunk in response.aiter_raw()])
        finally:
            await response.aclose()
        raise core.failed(request, response, raw)

    async def handle_async_request(self, request: Any) -> Any:
        core = self._core
        policy, paced = core.prepare(request)
        try:
            return await acall(
                self._attempt,
                request,
                paced,
                policy=policy,
                operation=core.operation,
                breaker=core.breaker,
                budget=core.budget,
                limiter=paced,
                clock=core.clock,
            )
        except _FailedResponse as given_up:
            return given_up.response

    async def aclose(self) -> None:
        await self._core.transport.aclose()

    async def __aenter__(self) -> AsyncRetryTransport:
        await self._core.transport.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._core.transport.__aexit__(*exc_info)
