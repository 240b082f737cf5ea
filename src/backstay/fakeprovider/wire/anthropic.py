"""The Anthropic Messages wire format: JSON messages, the SSE event sequence, errors.

Stream: ``message_start`` (usage with the input tokens and ``output_tokens: 1``), ``ping``,
per content block ``content_block_start`` / ``content_block_delta`` (``text_delta`` or
``input_json_delta``) / ``content_block_stop``, ``message_delta`` (stop reason and the
final usage), ``message_stop``. Errors: ``{"type": "error", "error": {"type", "message"},
"request_id"}`` with a ``request-id`` header.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, Final

from backstay.fakeprovider._answer import Answer
from backstay.fakeprovider.faults import FaultKind
from backstay.fakeprovider.wire.base import SSE_TYPE, ErrorContext, Reply, dumps, retry_headers, sse

REQUEST_ID_HEADER: Final = "request-id"
CONTEXT_WINDOW: Final = 200_000

_ERRORS: Final[Mapping[FaultKind, tuple[int, str, str]]] = {
    FaultKind.RATE_LIMIT: (
        429,
        "rate_limit_error",
        "This request would exceed your organization's rate limit of {limit} {dimension} per "
        "minute (model: {model}). For details, refer to: "
        "https://docs.claude.com/en/api/rate-limits. You can see the response headers for "
        "current usage. Please reduce the prompt length or the maximum tokens requested, or "
        "try again later.",
    ),
    FaultKind.SERVER_ERROR: (500, "api_error", "Internal server error"),
    FaultKind.BAD_GATEWAY: (502, "api_error", "Bad gateway"),
    FaultKind.UNAVAILABLE: (503, "api_error", "Service unavailable"),
    FaultKind.GATEWAY_TIMEOUT: (504, "timeout_error", "Request timed out"),
    FaultKind.OVERLOADED: (529, "overloaded_error", "Overloaded"),
    FaultKind.UNAUTHORIZED: (401, "authentication_error", "invalid x-api-key"),
    FaultKind.FORBIDDEN: (
        403,
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
    ),
    FaultKind.CONTEXT_OVERFLOW: (
        400,
        "invalid_request_error",
        "prompt is too long: {tokens} tokens > 200000 maximum",
    ),
    FaultKind.CONTENT_POLICY: (
        400,
        "invalid_request_error",
        "Output blocked by content filtering policy",
    ),
    FaultKind.QUOTA_EXHAUSTED: (
        400,
        "invalid_request_error",
        "Your credit balance is too low to access the Anthropic API. Please go to Plans & "
        "Billing to upgrade or purchase credits.",
    ),
}


def _envelope(kind: str, message: str, request_id: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": request_id,
    }


def error(kind: FaultKind, ctx: ErrorContext) -> Reply:
    status, error_type, template = _ERRORS[kind]
    message = template.format(
        limit=ctx.limit or 50,
        dimension="input tokens" if ctx.dimension == "tokens" else "requests",
        model=ctx.model,
        tokens=max(ctx.input_tokens, CONTEXT_WINDOW + 1),
    )
    return Reply(
        status=status,
        headers={REQUEST_ID_HEADER: ctx.request_id, **retry_headers(ctx.retry_after_s)},
        body=dumps(_envelope(error_type, message, ctx.request_id)),
    )


def bad_request(message: str, request_id: str) -> Reply:
    return Reply(
        status=400,
        headers={REQUEST_ID_HEADER: request_id},
        body=dumps(_envelope("invalid_request_error", message, request_id)),
    )


def stream_error(request_id: str) -> bytes:
    body = _envelope("overloaded_error", "Overloaded", request_id)
    body["error"]["details"] = None
    return sse(body, "error")


def _usage(answer: Answer, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": answer.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _stop_reason(answer: Answer) -> str:
    if answer.is_tool_call:
        return "tool_use"
    return "max_tokens" if answer.truncated else "end_turn"


def _content(answer: Answer) -> list[dict[str, Any]]:
    if answer.tool_name is not None:
        return [
            {
                "type": "tool_use",
                "id": f"toolu_{answer.call_id}",
                "name": answer.tool_name,
                "input": _arguments(answer),
            }
        ]
    return [{"type": "text", "text": answer.text}]


def _arguments(answer: Answer) -> Any:
    return json.loads(answer.tool_arguments)


def message(answer: Answer, model: str, request_id: str) -> Reply:
    body = {
        "id": f"msg_{answer.call_id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _content(answer),
        "stop_reason": _stop_reason(answer),
        "stop_sequence": None,
        "usage": _usage(answer, answer.output_tokens),
    }
    return Reply(status=200, headers={REQUEST_ID_HEADER: request_id}, body=dumps(body))


def stream(answer: Answer, model: str, request_id: str) -> Reply:
    start: dict[str, Any] = {
        "id": f"msg_{answer.call_id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(answer, 1),
    }
    events = [
        sse({"type": "message_start", "message": start}, "message_start"),
    ]
    if answer.tool_name is not None:
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": f"toolu_{answer.call_id}",
            "name": answer.tool_name,
            "input": {},
        }
        deltas = [{"type": "input_json_delta", "partial_json": answer.tool_arguments}]
    else:
        block = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in answer.pieces]
    events.append(
        sse(
            {"type": "content_block_start", "index": 0, "content_block": block},
            "content_block_start",
        )
    )
    events.append(sse({"type": "ping"}, "ping"))
    events.extend(
        sse({"type": "content_block_delta", "index": 0, "delta": d}, "content_block_delta")
        for d in deltas
    )
    events.append(sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    final = {
        "type": "message_delta",
        "delta": {"stop_reason": _stop_reason(answer), "stop_sequence": None},
        "usage": {
            "input_tokens": answer.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": answer.output_tokens,
        },
    }
    events.append(sse(final, "message_delta"))
    events.append(sse({"type": "message_stop"}, "message_stop"))
    return Reply(
        status=200,
        headers={REQUEST_ID_HEADER: request_id},
        events=tuple(events),
        content_type=SSE_TYPE,
    )


def count_tokens(input_tokens: int, request_id: str) -> Reply:
    return Reply(
        status=200,
        headers={REQUEST_ID_HEADER: request_id},
        body=dumps({"input_tokens": input_tokens}),
    )


def models(names: tuple[str, ...]) -> Reply:
    created = time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime(0))
    data = [
        {"type": "model", "id": name, "display_name": name, "created_at": created} for name in names
    ]
    return Reply(
        status=200,
        headers={},
        body=dumps(
            {
                "data": data,
                "has_more": False,
                "first_id": names[0] if names else None,
                "last_id": names[-1] if names else None,
            }
        ),
    )
