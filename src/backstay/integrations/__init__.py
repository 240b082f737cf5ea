"""backstay inside the SDKs people already use.

* ``httpx``: ``RetryTransport`` / ``AsyncRetryTransport``, a transport for any httpx or
  httpx2 client that sends each request under a backstay policy, breaker, budget and
  rate limiter, classifying responses the way ``backstay.classify`` does;
* ``clients``: ``anthropic_client``, ``openai_client``, ``gemini_client`` (and async
  twins): the official clients with their own retries off and backstay's transport in;
* ``fallback``: ``FallbackTransport`` / ``AsyncFallbackTransport``, a fallback chain of
  same-wire-format candidates inside one client (``openai_client(fallback=chain)``).

Nothing here imports an SDK or an HTTP library until a client is built; a missing SDK is
a ``ConfigError`` naming the extra to install. See ``docs/integrations.md``.
"""

from __future__ import annotations

from backstay.integrations.clients import (
    anthropic_client,
    async_anthropic_client,
    async_openai_client,
    gemini_client,
    openai_client,
)
from backstay.integrations.fallback import (
    CANDIDATE_EXTENSION,
    AsyncFallbackTransport,
    FallbackTransport,
)
from backstay.integrations.httpx import (
    DEFAULT_IDEMPOTENCY_HEADER,
    AsyncRetryTransport,
    RetryTransport,
)

__all__ = [
    "CANDIDATE_EXTENSION",
    "DEFAULT_IDEMPOTENCY_HEADER",
    "AsyncFallbackTransport",
    "AsyncRetryTransport",
    "FallbackTransport",
    "RetryTransport",
    "anthropic_client",
    "async_anthropic_client",
    "async_openai_client",
    "gemini_client",
    "openai_client",
]
