"""OpenAI's error bodies, shared by Chat Completions and Responses:
``{"error": {"message", "type", "param", "code"}}`` with an ``x-request-id`` header."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from backstay.fakeprovider.faults import FaultKind
from backstay.fakeprovider.wire.base import ErrorContext, Reply, dumps, go_duration, retry_headers

REQUEST_ID_HEADER: Final = "x-request-id"
CONTEXT_WINDOW: Final = 128_000

# kind → (status, type, code, param, message template)
_ERRORS: Final[Mapping[FaultKind, tuple[int, str | None, str | None, str | None, str]]] = {
    FaultKind.RATE_LIMIT: (
        429,
        "{dimension}",
        "rate_limit_exceeded",
        None,
        "Rate limit reached for {model} in organization org-fake on {dimension} per min "
        "({short}): Limit {limit}, Used {limit}, Requested {requested}. Please try again in "
        "{wait}. Visit https://platform.openai.com/account/rate-limits to learn more.",
    ),
    FaultKind.SERVER_ERROR: (
        500,
        "server_error",
        None,
        None,
        "The server had an error while processing your request. Sorry about that!",
    ),
    FaultKind.BAD_GATEWAY: (502, "server_error", None, None, "Bad gateway."),
    FaultKind.UNAVAILABLE: (503, "server_error", None, None, "Service unavailable."),
    FaultKind.GATEWAY_TIMEOUT: (504, None, None, None, "Gateway timeout."),
    FaultKind.OVERLOADED: (
        503,
        "server_error",
        "server_is_overloaded",
        None,
        "That model is currently overloaded with other requests. You can retry your request, "
        "or contact us through our help center at help.openai.com if the error persists.",
    ),
    FaultKind.UNAUTHORIZED: (
        401,
        "invalid_request_error",
        "invalid_api_key",
        None,
        "Incorrect API key provided. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
    ),
    FaultKind.FORBIDDEN: (
        403,
        "request_forbidden",
        "unsupported_country_region_territory",
        None,
        "Country, region, or territory not supported",
    ),
    FaultKind.CONTEXT_OVERFLOW: (
        400,
        "invalid_request_error",
        "context_length_exceeded",
        "messages",
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in {tokens} tokens. Please reduce the length of the messages.",
    ),
    FaultKind.CONTENT_POLICY: (
        400,
        "invalid_request_error",
        "content_policy_violation",
        None,
        "Your request was rejected as a result of our safety system. Your prompt may contain "
        "text that is not allowed by our safety system.",
    ),
    FaultKind.QUOTA_EXHAUSTED: (
        429,
        "insufficient_quota",
        "insufficient_quota",
        None,
        "You exceeded your current quota, please check your plan and billing details. For "
        "more information on this error, read the docs: "
        "https://platform.openai.com/docs/guides/error-codes/api-errors.",
    ),
}

_TOO_LARGE: Final = (
    "Request too large for {model} in organization org-fake on tokens per min (TPM): Limit "
    "{limit}, Requested {requested}. The input or output tokens must be reduced in order to "
    "run successfully. Visit https://platform.openai.com/account/rate-limits to learn more."
)


def _inner(kind: FaultKind, ctx: ErrorContext) -> tuple[int, dict[str, Any]]:
    status, error_type, code, param, template = _ERRORS[kind]
    if kind is FaultKind.RATE_LIMIT and ctx.too_large:
        template = _TOO_LARGE
    fields = {
        "model": ctx.model,
        "dimension": ctx.dimension,
        "short": "TPM" if ctx.dimension == "tokens" else "RPM",
        "limit": ctx.limit or 60,
        "requested": ctx.requested,
        "wait": go_duration(ctx.retry_after_s or 1.0),
        "tokens": max(ctx.input_tokens, CONTEXT_WINDOW + 1),
    }
    return status, {
        "message": template.format(**fields),
        "type": error_type.format(**fields) if error_type else None,
        "param": param,
        "code": code,
    }


def error(kind: FaultKind, ctx: ErrorContext, *, responses: bool = False) -> Reply:
    """The error answer of ``kind``; ``responses`` for the Responses API's wording."""
    status, inner = _inner(kind, ctx)
    if kind is FaultKind.CONTEXT_OVERFLOW and responses:
        inner["param"] = "input"
        inner["message"] = (
            "Your input exceeds the context window of this model. Please adjust your input "
            "and try again."
        )
    return Reply(
        status=status,
        headers={REQUEST_ID_HEADER: ctx.request_id, **retry_headers(ctx.retry_after_s)},
        body=dumps({"error": inner}),
    )


def bad_request(message: str, request_id: str) -> Reply:
    inner = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    return Reply(status=400, headers={REQUEST_ID_HEADER: request_id}, body=dumps({"error": inner}))


def stream_error_body() -> dict[str, Any]:
    """The inner error sent inside a 200 stream."""
    return {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error",
        "param": None,
        "code": "server_error",
    }


def models(names: tuple[str, ...]) -> Reply:
    data = [{"id": n, "object": "model", "created": 0, "owned_by": "backstay"} for n in names]
    return Reply(status=200, headers={}, body=dumps({"object": "list", "data": data}))
