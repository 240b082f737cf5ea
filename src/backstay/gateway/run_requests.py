"""What a request carrying a run token becomes upstream: pure functions.

The token the agent sent as its API key is replaced by the run's real key, in the header
(or ``key=`` query parameter) it came in: ``x-api-key``, ``Authorization: Bearer``,
``x-goog-api-key``. A request whose circuit is open moves to the run's fallback model
(``with_model``): the body's ``model`` for Anthropic and OpenAI, the path for Gemini.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import parse_qsl, urlencode

__all__ = ["real_key_headers", "real_key_path", "with_model"]

_KEY_HEADERS: Final = frozenset({"x-api-key", "x-goog-api-key"})
_GEMINI_MODEL: Final = re.compile(r"^(/(?:v1beta|v1|v1alpha)/models/)([^/:]+)(:.*)$")


def real_key_headers(
    headers: Iterable[tuple[str, str]], token: str, key: str
) -> list[tuple[str, str]]:
    """``headers`` with ``token`` replaced by ``key`` wherever it is the credential."""
    out = []
    for name, value in headers:
        lowered, sent = name.lower(), value
        if lowered in _KEY_HEADERS and value == token:
            sent = key
        elif lowered == "authorization" and value.partition(" ")[2].strip() == token:
            sent = f"{value.partition(' ')[0]} {key}"
        out.append((name, sent))
    return out


def real_key_path(raw_path: str, token: str, key: str) -> str:
    """``raw_path`` with a ``key=TOKEN`` query parameter holding ``key`` instead."""
    path, mark, query = raw_path.partition("?")
    if not mark or token not in query:
        return raw_path
    pairs = [(name, key if value == token else value) for name, value in parse_qsl(query)]
    return f"{path}?{urlencode(pairs)}"


def with_model(provider: str, raw_path: str, body: bytes, model: str) -> tuple[str, bytes]:
    """The path and body of the same request for ``model``; unchanged when the model
    cannot be found where its provider puts it."""
    if provider == "gemini":
        path, mark, query = raw_path.partition("?")
        found = _GEMINI_MODEL.match(path)
        if found is None:
            return raw_path, body
        return f"{found[1]}{model}{found[3]}{mark}{query}", body
    try:
        data = json.loads(body)
    except ValueError:
        return raw_path, body
    if not isinstance(data, dict) or "model" not in data:
        return raw_path, body
    data["model"] = model
    return raw_path, json.dumps(data, ensure_ascii=False).encode()
