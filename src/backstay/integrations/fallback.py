"""``FallbackTransport`` / ``AsyncFallbackTransport``: a fallback chain inside one httpx
client, for candidates that speak the same wire format (two Anthropic models, or
OpenAI-compatible endpoints).

Each request is sent through ``FallbackChain.call`` (``acall``): the chain picks the
candidate (its rules, breakers and cooldowns decide, one retry budget and deadline over
the whole chain), and the transport rewrites the request for it:

* the JSON body's ``model`` becomes the candidate's model;
* a candidate with a ``base_url`` gets the request's URL with the first candidate's
  ``base_url`` prefix replaced by its own (the client's ``base_url`` is the first
  candidate's; ``anthropic_client(fallback=chain)`` sets it so);
* a candidate with an ``api_key_env`` gets that variable's value (read when the request
  is made) as its credential: ``x-api-key`` for ``provider="anthropic"``, else
  ``Authorization: Bearer``; without one, the request's own credential is kept.

A response with status >= 400 is read and classified (``classify_response``) and the
chain decides; when it gives up, the last response is returned as it came (the SDK raises
its own error for it). A response below 400 is handed to the caller at once, body unread:
so a streamed response falls back only before the first byte of its body reaches the
caller — a stream that breaks later is the caller's to handle. A request whose body is
not in memory (a streamed upload) cannot be sent twice: it goes to the chosen candidate
once, without fallback. ``Answer.candidate`` is not visible through an SDK: the response
carries the answering candidate's name in ``response.extensions["backstay_candidate"]``
and the ``retry.fell_back`` event says when the chain moved.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Final

from backstay.errors import ConfigError
from backstay.fallback.candidate import Candidate
from backstay.fallback.chain import FallbackChain
from backstay.integrations.httpx import _Core, _FailedResponse, _replayable
from backstay.redact import register_secret

__all__ = [
    "CANDIDATE_EXTENSION",
    "AsyncFallbackTransport",
    "FallbackTransport",
    "chain_base_url",
]

# The response extension naming the candidate that answered.
CANDIDATE_EXTENSION: Final = "backstay_candidate"
_FIRST_FAILING_STATUS: Final = 400


class _Rewriter:
    """Rewrites a request for a candidate; reads failing responses."""

    def __init__(self, chain: FallbackChain, *, provider: str | None) -> None:
        if not isinstance(chain, FallbackChain):
            raise ConfigError(f"must be a FallbackChain, got {chain!r}", where="fallback")
        first = chain.requested
        if first.base_url is None and any(c.base_url for c in chain.candidates):
            raise ConfigError(
                "the first candidate needs a base_url when another names one (its URL "
                "prefix is what the others' replace)",
                where="fallback",
            )
        self.chain = chain
        self.provider = provider
        self.core = _Core(
            None,
            policy=chain.policy,
            breaker=None,
            budget=None,
            limiter=None,
            clock=None,
            provider=provider,
            operation=chain.name or "http",
            idempotency_header=None,
        )

    def _credential(self, headers: dict[str, str], candidate: Candidate) -> None:
        variable = candidate.api_key_env
        if variable is None:
            return
        key = os.environ.get(variable, "")
        if not key:
            raise ConfigError(
                f"{variable} is not set (the key of candidate {candidate.name})",
                where="api_key_env",
            )
        register_secret(key)  # never shown in an event, log line or error
        for name in ("x-api-key", "authorization", "x-goog-api-key"):
            headers.pop(name, None)
        if self.provider == "anthropic":
            headers["x-api-key"] = key
        else:
            headers["authorization"] = f"Bearer {key}"

    def _url(self, url: str, candidate: Candidate) -> str:
        first = self.chain.requested.base_url
        if candidate.base_url is None or first is None:
            return url
        prefix = first.rstrip("/")
        if not url.startswith(prefix):
            return url
        return candidate.base_url.rstrip("/") + url[len(prefix) :]

    @staticmethod
    def _body(content: bytes, model: str) -> bytes:
        try:
            data = json.loads(content) if content else None
        except ValueError:
            return content
        if not isinstance(data, dict) or "model" not in data:
            return content
        data["model"] = model
        return json.dumps(data).encode("utf-8")

    def request_for(self, request: Any, candidate: Candidate) -> Any:
        """A copy of ``request`` sent to ``candidate``."""
        headers = {
            k.lower(): v for k, v in request.headers.items() if k.lower() != "content-length"
        }
        self._credential(headers, candidate)
        return type(request)(
            request.method,
            self._url(str(request.url), candidate),
            headers=headers,
            content=self._body(request.content, candidate.model),
            extensions=request.extensions,
        )

    def failing(self, response: Any) -> bool:
        return int(response.status_code) >= _FIRST_FAILING_STATUS

    @staticmethod
    def answered(response: Any, candidate: Candidate) -> Any:
        response.extensions[CANDIDATE_EXTENSION] = candidate.name
        return response


class FallbackTransport:
    """A sync transport sending each request through ``chain``; see the module.
    ``provider`` (``"anthropic"`` or ``"openai"``) sets the credential header and helps
    classify bodies."""

    def __init__(
        self, transport: Any, chain: FallbackChain, *, provider: str | None = None
    ) -> None:
        self._transport = transport
        self._rewriter = _Rewriter(chain, provider=provider)

    def _attempt(self, request: Any, candidate: Candidate) -> Any:
        rewriter = self._rewriter
        sent = rewriter.request_for(request, candidate)
        response = self._transport.handle_request(sent)
        if not rewriter.failing(response):
            return rewriter.answered(response, candidate)
        try:
            raw = b"".join(response.iter_raw())
        finally:
            response.close()
        raise rewriter.core.failed(sent, response, raw)

    def handle_request(self, request: Any) -> Any:
        chain = self._rewriter.chain
        if not _replayable(request):
            return self._transport.handle_request(request)
        try:
            return chain.call(lambda c: self._attempt(request, c)).value
        except _FailedResponse as given_up:
            return given_up.response

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> FallbackTransport:
        self._transport.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._transport.__exit__(*exc_info)


class AsyncFallbackTransport:
    """``FallbackTransport`` for an ``AsyncClient``: the same behaviour."""

    def __init__(
        self, transport: Any, chain: FallbackChain, *, provider: str | None = None
    ) -> None:
        self._transport = transport
        self._rewriter = _Rewriter(chain, provider=provider)

    async def _attempt(self, request: Any, candidate: Candidate) -> Any:
        rewriter = self._rewriter
        sent = rewriter.request_for(request, candidate)
        response = await self._transport.handle_async_request(sent)
        if not rewriter.failing(response):
            return rewriter.answered(response, candidate)
        try:
            raw = b"".join([chunk async for chunk in response.aiter_raw()])
        finally:
            await response.aclose()
        raise rewriter.core.failed(sent, response, raw)

    async def handle_async_request(self, request: Any) -> Any:
        chain = self._rewriter.chain
        if not _replayable(request):
            return await self._transport.handle_async_request(request)

        async def attempt(candidate: Candidate) -> Any:
            return await self._attempt(request, candidate)

        try:
            return (await chain.acall(attempt)).value
        except _FailedResponse as given_up:
            return given_up.response

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> AsyncFallbackTransport:
        await self._transport.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._transport.__aexit__(*exc_info)


def chain_base_url(chain: FallbackChain, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The client's keywords with ``base_url`` set to the chain's first candidate's, when
    it has one and none was given."""
    out = dict(kwargs)
    first = chain.requested.base_url
    if first is not None:
        out.setdefault("base_url", first)
    return out
