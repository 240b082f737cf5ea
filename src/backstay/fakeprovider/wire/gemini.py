"""The Gemini API wire format: ``GenerateContentResponse`` JSON, its SSE stream
(``streamGenerateContent?alt=sse``: one ``data:`` line per chunk, usage on the last), and
google.rpc.Status errors with ``QuotaFailure``, ``ErrorInfo`` and ``RetryInfo`` details.

Content policy is not an error here: Gemini answers 200 with ``promptFeedback.blockReason``
and no candidates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from backstay.fakeprovider._answer import Answer
from backstay.fakeprovider.faults import FaultKind
from backstay.fakeprovider.wire.base import (
    SSE_TYPE,
    ErrorContext,
    Reply,
    dumps,
    retry_headers,
    seconds_text,
)

CONTEXT_WINDOW: Final = 1_048_576
_RPC: Final = "type.googleapis.com/google.rpc."
_METRIC: Final = "generativelanguage.googleapis.com/generate_content_free_tier_requests"

# kind → (status, canonical status, message template)
_ERRORS: Final[Mapping[FaultKind, tuple[int, str, str]]] = {
    FaultKind.RATE_LIMIT: (
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
        "\n* Quota exceeded for metric: {metric}, limit: {limit}, model: {model}"
        "\nPlease retry in {wait}.",
    ),
    FaultKind.QUOTA_EXHAUSTED: (
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
        "\n* Quota exceeded for metric: {metric}, limit: 250, model: {model}",
    ),
    FaultKind.SERVER_ERROR: (
        500,
        "INTERNAL",
        "An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting",
    ),
    FaultKind.BAD_GATEWAY: (502, "UNAVAILABLE", "Bad Gateway"),
    FaultKind.UNAVAILABLE: (503, "UNAVAILABLE", "The service is currently unavailable."),
    FaultKind.GATEWAY_TIMEOUT: (
        504,
        "DEADLINE_EXCEEDED",
        "Deadline expired before operation could complete.",
    ),
    FaultKind.OVERLOADED: (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
    FaultKind.UNAUTHORIZED: (
        400,
        "INVALID_ARGUMENT",
        "API key not valid. Please pass a valid API key.",
    ),
    FaultKind.FORBIDDEN: (403, "PERMISSION_DENIED", "The caller does not have permission"),
    FaultKind.CONTEXT_OVERFLOW: (
        400,
        "INVALID_ARGUMENT",
        "The input token count ({tokens}) exceeds the maximum number of tokens allowed (1048576).",
    ),
}


def _quota_failure(quota_id: str, model: str, value: int) -> dict[str, Any]:
    return {
        "@type": _RPC + "QuotaFailure",
        "violations": [
            {
                "quotaMetric": _METRIC,
                "quotaId": quota_id,
                "quotaDimensions": {"location": "global", "model": model},
                "quotaValue": str(value),
            }
        ],
    }


def _details(kind: FaultKind, ctx: ErrorContext) -> list[dict[str, Any]]:
    if kind is FaultKind.RATE_LIMIT:
        wait = ctx.retry_after_s if ctx.retry_after_s is not None else 1.0
        return [
            _quota_failure(
                "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", ctx.model, ctx.limit or 10
            ),
            {"@type": _RPC + "RetryInfo", "retryDelay": seconds_text(wait)},
        ]
    if kind is FaultKind.QUOTA_EXHAUSTED:
        return [
            _quota_failure("GenerateRequestsPerDayPerProjectPerModel-FreeTier", ctx.model, 250),
            {"@type": _RPC + "RetryInfo", "retryDelay": "36s"},
        ]
    if kind is FaultKind.UNAUTHORIZED:
        return [
            {
                "@type": _RPC + "ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
        ]
    return []


def _status(code: int, status: str, message: str, details: list[dict[str, Any]]) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return dumps({"error": error})


def error(kind: FaultKind, ctx: ErrorContext) -> Reply:
    """The error answer of ``kind`` (not content policy, which is ``blocked``)."""
    code, status, template = _ERRORS[kind]
    wait = ctx.retry_after_s if ctx.retry_after_s is not None else 1.0
    message = template.format(
        metric=_METRIC,
        limit=ctx.limit or 10,
        model=ctx.model,
        wait=seconds_text(wait),
        tokens=max(ctx.input_tokens, CONTEXT_WINDOW + 1),
    )
    # Gemini sends no Retry-After header: the wait is in RetryInfo only.
    headers = {} if kind is FaultKind.RATE_LIMIT else retry_headers(ctx.retry_after_s)
    return Reply(
        status=code, headers=headers, body=_status(code, status, message, _details(kind, ctx))
    )


def bad_request(message: str) -> Reply:
    return Reply(status=400, headers={}, body=_status(400, "INVALID_ARGUMENT", message, []))


def stream_error() -> bytes:
    body = _status(503, "UNAVAILABLE", "The model is overloaded. Please try again later.", [])
    return b"data: " + body + b"\r\n\r\n"


def _usage(answer: Answer) -> dict[str, Any]:
    return {
        "promptTokenCount": answer.input_tokens,
        "candidatesTokenCount": answer.output_tokens,
        "totalTokenCount": answer.input_tokens + answer.output_tokens,
    }


def _parts(answer: Answer, text: str) -> list[dict[str, Any]]:
    if answer.tool_name is not None:
        return [
            {"functionCall": {"name": answer.tool_name, "args": json.loads(answer.tool_arguments)}}
        ]
    return [{"text": text}]


def _chunk(answer: Answer, model: str, text: str, *, finish: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {"parts": _parts(answer, text), "role": "model"},
        "index": 0,
    }
    if finish:
        candidate["finishReason"] = "MAX_TOKENS" if answer.truncated else "STOP"
    chunk: dict[str, Any] = {"candidates": [candidate]}
    if finish:
        chunk["usageMetadata"] = _usage(answer)
    else:
        chunk["usageMetadata"] = {
            "promptTokenCount": answer.input_tokens,
            "totalTokenCount": answer.input_tokens,
        }
    chunk["modelVersion"] = model
    chunk["responseId"] = answer.call_id
    return chunk


def _blocked(answer: Answer, model: str) -> dict[str, Any]:
    return {
        "promptFeedback": {
            "blockReason": "SAFETY",
            "safetyRatings": [
                {
                    "category": "HARM_CATEGORY_DANGEROUS_CONTENT",
                    "probability": "HIGH",
                    "blocked": True,
                }
            ],
        },
        "usageMetadata": {
            "promptTokenCount": answer.input_tokens,
            "totalTokenCount": answer.input_tokens,
        },
        "modelVersion": model,
        "responseId": answer.call_id,
    }


def _sse_line(chunk: Mapping[str, Any]) -> bytes:
    return b"data: " + dumps(chunk) + b"\r\n\r\n"


def content(answer: Answer, model: str, *, blocked: bool = False) -> Reply:
    body = _blocked(answer, model) if blocked else _chunk(answer, model, answer.text, finish=True)
    return Reply(status=200, headers={}, body=dumps(body))


def stream(answer: Answer, model: str, *, blocked: bool = False) -> Reply:
    """The ``alt=sse`` stream (the only form the SDK and the Gemini CLI ask for)."""
    if blocked:
        chunks = [_blocked(answer, model)]
    elif answer.is_tool_call or len(answer.pieces) <= 1:
        chunks = [_chunk(answer, model, answer.text, finish=True)]
    else:
        last = len(answer.pieces) - 1
        chunks = [
            _chunk(answer, model, piece, finish=i == last) for i, piece in enumerate(answer.pieces)
        ]
    return Reply(
        status=200,
        headers={},
        events=tuple(_sse_line(c) for c in chunks),
        content_type=SSE_TYPE,
    )


def models(names: tuple[str, ...]) -> Reply:
    data = [
        {
            "name": f"models/{name}",
            "version": "001",
            "displayName": name,
            "inputTokenLimit": CONTEXT_WINDOW,
            "outputTokenLimit": 65536,
            "supportedGenerationMethods": ["generateContent", "countTokens"],
        }
        for name in names
    ]
    return Reply(status=200, headers={}, body=dumps({"models": data}))


def count_tokens(input_tokens: int) -> Reply:
    return Reply(status=200, headers={}, body=dumps({"totalTokens": input_tokens}))
