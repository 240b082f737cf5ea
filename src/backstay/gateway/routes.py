"""Which provider a request is for, and which model: a pure function of the method, the
path, the headers and the body.

| method | path | provider |
|---|---|---|
| POST | ``/v1/messages``, ``/v1/messages/count_tokens`` | anthropic |
| POST | ``/v1/chat/completions``, ``/v1/responses`` | openai |
| POST | ``/v1beta/models/{model}:{method}`` (also under ``/v1/``) | gemini |
| GET | ``/v1beta/models[/{name}]`` | gemini |
| GET | ``/v1/models[/{id}]`` | by header (below) |

``/v1/models`` is Anthropic's with an ``anthropic-version`` header, Gemini's with an
``x-goog-api-key`` header, else OpenAI's. The model of an Anthropic or OpenAI request is
its body's ``model``; Gemini's is in the path. A listing has no model (``*``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Final

__all__ = ["ANY_MODEL", "NOT_JSON", "Route", "body_json", "route"]

ANY_MODEL: Final = "*"

_ANTHROPIC_POST: Final = frozenset({"/v1/messages", "/v1/messages/count_tokens"})
_OPENAI_POST: Final = frozenset({"/v1/chat/completions", "/v1/responses"})
_GEMINI_CALL: Final = re.compile(
    r"^/(?:v1beta|v1|v1alpha)/models/(?P<model>[^/:]+):(?P<method>generateContent|"
    r"streamGenerateContent|countTokens)$"
)
_GEMINI_LIST: Final = re.compile(r"^/v1beta/models(?:/[^/:]+)?$")
_SHARED_LIST: Final = re.compile(r"^/v1/models(?:/[^/:]+)?$")
# The body's model is read only from a body this short; longer ones are answers' work.
_MAX_MODEL_CHARS: Final = 200
# ``body_json`` of a body that is not JSON; ``_UNREAD``: ``route``'s ``parsed`` when the
# caller did not parse the body.
NOT_JSON: Final = object()
_UNREAD: Final = object()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """A request the gateway forwards: to ``provider``, for ``model`` (``ANY_MODEL`` for a
    listing), on ``endpoint`` (the path, which is also what is appended upstream)."""

    provider: str
    model: str
    endpoint: str


def body_json(body: bytes) -> object:
    """A request body parsed from JSON (``NOT_JSON`` when it is not): parsed once per
    request, for its model here and its estimated tokens at the rate limiter."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return NOT_JSON


def _body_model(data: object) -> str:
    model = data.get("model") if isinstance(data, dict) else None
    if isinstance(model, str) and 0 < len(model) <= _MAX_MODEL_CHARS:
        return model
    return ANY_MODEL


def _listing_provider(headers: Mapping[str, str]) -> str:
    lowered = {name.lower() for name in headers}
    if "anthropic-version" in lowered:
        return "anthropic"
    if "x-goog-api-key" in lowered:
        return "gemini"
    return "openai"


def route(
    method: str, path: str, headers: Mapping[str, str], body: bytes, *, parsed: object = _UNREAD
) -> Route | None:
    """The route of a request, or ``None`` for one the gateway does not serve; ``parsed``:
    its body as ``body_json`` gave it, when the caller has it already."""
    if method == "POST":
        if path in _ANTHROPIC_POST or path in _OPENAI_POST:
            data = body_json(body) if parsed is _UNREAD else parsed
            provider = "anthropic" if path in _ANTHROPIC_POST else "openai"
            return Route(provider=provider, model=_body_model(data), endpoint=path)
        found = _GEMINI_CALL.match(path)
        if found is not None:
            return Route(provider="gemini", model=found["model"], endpoint=path)
        return None
    if method == "GET":
        if _GEMINI_LIST.match(path):
            return Route(provider="gemini", model=ANY_MODEL, endpoint=path)
        if _SHARED_LIST.match(path):
            return Route(provider=_listing_provider(headers), model=ANY_MODEL, endpoint=path)
    return None
