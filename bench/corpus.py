"""A labelled corpus of real provider failures (shapes from the providers' documentation and
public issue threads), used to compare retry decisions across classifiers."""

from __future__ import annotations

import dataclasses
import json
from typing import Any


@dataclasses.dataclass(frozen=True, slots=True)
class Case:
    name: str
    provider: str
    status: int
    headers: dict[str, str]
    body: str
    kind: str
    retryable: bool


def _a(kind: str, message: str, **details: Any) -> str:
    error: dict[str, Any] = {"type": kind, "message": message}
    if details:
        error["details"] = details
    return json.dumps({"type": "error", "error": error, "request_id": "req_1"})


def _o(message: str, kind: str | None, code: str | None) -> str:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}})


def _g(code: int, status: str, message: str, details: list[dict[str, Any]] | None = None) -> str:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return json.dumps({"error": error})


def _quota(quota_id: str) -> list[dict[str, Any]]:
    return [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaId": quota_id, "quotaValue": "250"}],
        },
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "36s"},
    ]


CASES: tuple[Case, ...] = (
    Case(
        "a-429",
        "anthropic",
        429,
        {"retry-after": "20"},
        _a("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
        "rate_limit",
        True,
    ),
    Case("a-529", "anthropic", 529, {}, _a("overloaded_error", "Overloaded"), "server_error", True),
    Case(
        "a-500",
        "anthropic",
        500,
        {},
        _a("api_error", "Internal server error"),
        "server_error",
        True,
    ),
    Case("a-504", "anthropic", 504, {}, _a("timeout_error", "Request timed out"), "timeout", True),
    Case(
        "a-context",
        "anthropic",
        400,
        {},
        _a("invalid_request_error", "prompt is too long: 208656 tokens > 200000 maximum"),
        "context_limit",
        False,
    ),
    Case(
        "a-credit",
        "anthropic",
        400,
        {},
        _a(
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
        ),
        "quota_exhausted",
        False,
    ),
    Case(
        "a-filter",
        "anthropic",
        400,
        {},
        _a("invalid_request_error", "Output blocked by content filtering policy"),
        "content_policy",
        False,
    ),
    Case(
        "a-spend-cap",
        "anthropic",
        429,
        {},
        _a(
            "rate_limit_error",
            "You have reached your specified API usage limits. You will regain access on 2026-12-01 at 00:00 UTC.",
            error_code="enforced_spend_limit_reached",
        ),
        "quota_exhausted",
        False,
    ),
    Case(
        "a-401",
        "anthropic",
        401,
        {},
        _a("authentication_error", "invalid x-api-key"),
        "auth",
        False,
    ),
    Case(
        "a-403",
        "anthropic",
        403,
        {},
        _a(
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        "auth",
        False,
    ),
    Case(
        "a-404",
        "anthropic",
        404,
        {},
        _a("not_found_error", "model: claude-nope"),
        "invalid_request",
        False,
    ),
    Case(
        "a-413",
        "anthropic",
        413,
        {},
        _a("request_too_large", "Request exceeds the maximum allowed number of bytes."),
        "invalid_request",
        False,
    ),
    Case(
        "a-subscription",
        "anthropic",
        429,
        {
            "anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-reset": "1798761600",
        },
        _a("rate_limit_error", "Rate limited"),
        "quota_exhausted",
        False,
    ),
    Case(
        "a-500-no-retry",
        "anthropic",
        500,
        {"x-should-retry": "false"},
        _a("api_error", "Internal server error"),
        "server_error",
        False,
    ),
    Case(
        "o-429",
        "openai",
        429,
        {"x-ratelimit-reset-requests": "6m0s"},
        _o(
            "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.",
            "requests",
            "rate_limit_exceeded",
        ),
        "rate_limit",
        True,
    ),
    Case(
        "o-quota",
        "openai",
        429,
        {},
        _o(
            "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota",
            "insufficient_quota",
        ),
        "quota_exhausted",
        False,
    ),
    Case(
        "o-quota-old",
        "openai",
        429,
        {},
        _o(
            "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota",
            None,
        ),
        "quota_exhausted",
        False,
    ),
    Case(
        "o-too-large",
        "openai",
        429,
        {},
        _o(
            "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order to run successfully.",
            "tokens",
            "rate_limit_exceeded",
        ),
        "invalid_request",
        False,
    ),
    Case(
        "o-context",
        "openai",
        400,
        {},
        _o(
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 8202 tokens. Please reduce the length of the messages.",
            "invalid_request_error",
            "context_length_exceeded",
        ),
        "context_limit",
        False,
    ),
    Case(
        "o-policy",
        "openai",
        400,
        {},
        _o(
            "Your request was rejected as a result of our safety system.",
            "invalid_request_error",
            "content_policy_violation",
        ),
        "content_policy",
        False,
    ),
    Case(
        "o-401",
        "openai",
        401,
        {},
        _o(
            "Incorrect API key provided: sk-proj-****. You can find your API key at https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            "invalid_api_key",
        ),
        "auth",
        False,
    ),
    Case(
        "o-region",
        "openai",
        403,
        {},
        _o(
            "Country, region, or territory not supported",
            "request_forbidden",
            "unsupported_country_region_territory",
        ),
        "auth",
        False,
    ),
    Case(
        "o-404",
        "openai",
        404,
        {},
        _o(
            "The model `gpt-5-nope` does not exist or you do not have access to it.",
            "invalid_request_error",
            "model_not_found",
        ),
        "invalid_request",
        False,
    ),
    Case(
        "o-500",
        "openai",
        500,
        {},
        _o(
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        ),
        "server_error",
        True,
    ),
    Case(
        "o-503",
        "openai",
        503,
        {},
        _o(
            "The engine is currently overloaded, please try again later.",
            "server_error",
            "server_is_overloaded",
        ),
        "server_error",
        True,
    ),
    Case(
        "o-502-html",
        "openai",
        502,
        {"content-type": "text/html"},
        "<html><body><h1>502 Bad Gateway</h1></body></html>",
        "server_error",
        True,
    ),
    Case(
        "g-429-minute",
        "gemini",
        429,
        {},
        _g(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
            _quota("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
        ),
        "rate_limit",
        True,
    ),
    Case(
        "g-429-day",
        "gemini",
        429,
        {},
        _g(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
            _quota("GenerateRequestsPerDayPerProjectPerModel-FreeTier"),
        ),
        "quota_exhausted",
        False,
    ),
    Case(
        "g-bad-key",
        "gemini",
        400,
        {},
        _g(
            400,
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
            [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                }
            ],
        ),
        "auth",
        False,
    ),
    Case(
        "g-context",
        "gemini",
        400,
        {},
        _g(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
        ),
        "context_limit",
        False,
    ),
    Case(
        "g-region",
        "gemini",
        400,
        {},
        _g(400, "FAILED_PRECONDITION", "User location is not supported for the API use."),
        "auth",
        False,
    ),
    Case(
        "g-503",
        "gemini",
        503,
        {},
        _g(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
        "server_error",
        True,
    ),
    Case(
        "g-500",
        "gemini",
        500,
        {},
        _g(500, "INTERNAL", "An internal error has occurred."),
        "server_error",
        True,
    ),
    Case(
        "g-504",
        "gemini",
        504,
        {},
        _g(504, "DEADLINE_EXCEEDED", "Deadline exceeded"),
        "timeout",
        True,
    ),
    Case(
        "g-403",
        "gemini",
        403,
        {},
        _g(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers."),
        "auth",
        False,
    ),
    Case(
        "g-499",
        "gemini",
        499,
        {},
        _g(499, "CANCELLED", "The operation was cancelled."),
        "cancelled",
        False,
    ),
)
