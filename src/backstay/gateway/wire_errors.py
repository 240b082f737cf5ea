"""Errors the gateway answers itself, in the wire format of the provider the client
speaks, so that its SDK raises its usual exception: a circuit that is open, an upstream
that could not be reached or timed out, a missing gateway token, a path it does not serve,
a run's request its spending budget has no room for (400).
An upstream's own error answers never pass through here: they are returned unchanged."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Final

__all__ = ["GatewayError", "gateway_error"]

# status → (Anthropic error.type, OpenAI error.type, Gemini status)
_SHAPES: Final = {
    400: ("invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"),
    401: ("authentication_error", "invalid_request_error", "UNAUTHENTICATED"),
    404: ("not_found_error", "invalid_request_error", "NOT_FOUND"),
    413: ("request_too_large", "invalid_request_error", "INVALID_ARGUMENT"),
    502: ("api_error", "server_error", "UNAVAILABLE"),
    503: ("overloaded_error", "server_error", "UNAVAILABLE"),
    504: ("timeout_error", "server_error", "DEADLINE_EXCEEDED"),
}
_PREFIX: Final = "backstay gateway: "


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GatewayError:
    """An answer the gateway makes itself: status, JSON body, headers."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...]


def gateway_error(
    provider: str | None, status: int, message: str, *, retry_after_s: float | None = None
) -> GatewayError:
    """The error ``status`` with ``message`` as ``provider`` (``None``: OpenAI's shape, the
    commonest) would send it; ``retry_after_s`` becomes a ``retry-after`` header."""
    anthropic_type, openai_type, gemini_status = _SHAPES[status]
    text = _PREFIX + message
    data: dict[str, object]
    if provider == "anthropic":
        data = {"type": "error", "error": {"type": anthropic_type, "message": text}}
    elif provider == "gemini":
        data = {"error": {"code": status, "message": text, "status": gemini_status}}
    else:
        data = {"error": {"message": text, "type": openai_type, "param": None, "code": None}}
    headers: list[tuple[str, str]] = [("content-type", "application/json")]
    if retry_after_s is not None and retry_after_s > 0:
        headers.append(("retry-after", str(max(1, math.ceil(retry_after_s)))))
    return GatewayError(status=status, body=json.dumps(data).encode(), headers=tuple(headers))
