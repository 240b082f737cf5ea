"""The headers a request and its answer cross the gateway with: pure functions.

Upstream, the client's headers go as they came (its API key included: ``x-api-key``,
``Authorization: Bearer``, ``x-goog-api-key``) less the hop-by-hop ones, the gateway's own
token, and the framing aiohttp sets itself; an Anthropic or OpenAI ``POST`` gets an
``Idempotency-Key`` (the client's own when it sent one), the same on every attempt. Back to
the client, the upstream's headers go less hop-by-hop and framing ones (the body is sent
decoded), plus ``x-backstay-attempts``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Final
from urllib.parse import parse_qsl

from backstay.gateway.settings import TOKEN_HEADER

try:  # aiohttp's headers: looked up without regard to case already
    from multidict import CIMultiDict, CIMultiDictProxy

    _CASELESS: tuple[type, ...] = (CIMultiDict, CIMultiDictProxy)
except ImportError:  # pragma: no cover - multidict comes with aiohttp
    _CASELESS = ()

__all__ = [
    "ATTEMPTS_HEADER",
    "IDEMPOTENCY_HEADER",
    "client_keys",
    "downstream_headers",
    "idempotency_key",
    "upstream_headers",
]

IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
ATTEMPTS_HEADER: Final = "x-backstay-attempts"
# RFC 9110 §7.6.1, plus what aiohttp writes itself for the body it sends.
_HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_NOT_UPSTREAM: Final = _HOP_BY_HOP | {"accept-encoding", TOKEN_HEADER, "idempotency-key"}
_NOT_DOWNSTREAM: Final = _HOP_BY_HOP | {"content-encoding"}
_KEYED_PROVIDERS: Final = frozenset({"anthropic", "openai"})
_KEY_PREFIX: Final = "backstay-gw-"


def idempotency_key(method: str, provider: str, headers: Mapping[str, str]) -> str | None:
    """The key one logical request keeps across its attempts: the client's own, else a new
    one for an Anthropic or OpenAI ``POST``, else ``None``."""
    given = _get(headers, "idempotency-key")
    if given:
        return given
    if method == "POST" and provider in _KEYED_PROVIDERS:
        return _KEY_PREFIX + uuid.uuid4().hex
    return None


def upstream_headers(headers: Iterable[tuple[str, str]], key: str | None) -> list[tuple[str, str]]:
    """The headers of every attempt of a request whose client sent ``headers``."""
    out = [(name, value) for name, value in headers if name.lower() not in _NOT_UPSTREAM]
    if key is not None:
        out.append((IDEMPOTENCY_HEADER, key))
    return out


def downstream_headers(headers: Iterable[tuple[str, str]], attempts: int) -> list[tuple[str, str]]:
    """The headers the client gets with an upstream answer that took ``attempts``."""
    out = [(name, value) for name, value in headers if name.lower() not in _NOT_DOWNSTREAM]
    out.append((ATTEMPTS_HEADER, str(attempts)))
    return out


def client_keys(headers: Mapping[str, str], query: str) -> list[str]:
    """The credentials a request carries (to be kept out of every text the gateway lets
    out): the API key headers' values, a bearer token, a ``key=`` query parameter."""
    found: list[str] = []
    for name in ("x-api-key", "x-goog-api-key", "authorization", TOKEN_HEADER):
        value = _get(headers, name)
        if value:
            scheme, _, rest = value.partition(" ")
            found.append(rest.strip() if scheme.lower() == "bearer" and rest else value)
    if query:
        found.extend(value for name, value in parse_qsl(query) if name == "key" and value)
    return found


def _get(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None and not isinstance(headers, _CASELESS):
        for key, candidate in headers.items():
            if key.lower() == name:
                return candidate
    return value
