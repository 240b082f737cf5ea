"""Built-in examples for ``backstay explain --examples``: real shapes of real failures."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

from backstay.classify import classify, classify_output, classify_response
from backstay.failure import Failure


@dataclasses.dataclass(frozen=True, slots=True)
class Example:
    name: str
    summary: str
    run: Callable[[], Failure]


def _anthropic(kind: str, message: str, **details: str) -> str:
    error: dict[str, object] = {"type": kind, "message": message}
    if details:
        error["details"] = details
    return json.dumps({"type": "error", "error": error, "request_id": "req_011CExample"})


def _openai(message: str, kind: str, code: str | None) -> str:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}})


def _gemini_quota(quota_id: str) -> str:
    return json.dumps(
        {
            "error": {
                "code": 429,
                "message": "You exceeded your current quota, please check your plan and "
                "billing details.",
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [
                            {
                                "quotaMetric": "generativelanguage.googleapis.com/"
                                "generate_content_free_tier_requests",
                                "quotaId": quota_id,
                            }
                        ],
                    },
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "36s"},
                ],
            }
        }
    )


EXAMPLES: tuple[Example, ...] = (
    Example(
        "anthropic-429",
        "Anthropic 429 rate_limit_error, retry-after: 30",
        lambda: classify_response(
            429,
            {"retry-after": "30"},
            _anthropic(
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
            ),
            provider="anthropic",
        ),
    ),
    Example(
        "anthropic-529",
        "Anthropic 529 overloaded_error",
        lambda: classify_response(
            529, {}, _anthropic("overloaded_error", "Overloaded"), provider="anthropic"
        ),
    ),
    Example(
        "anthropic-stream-overload",
        "overloaded_error inside a 200 SSE stream",
        lambda: classify_response(
            200,
            {"content-type": "text/event-stream"},
            "event: error\ndata: " + _anthropic("overloaded_error", "Overloaded"),
            provider="anthropic",
        ),
    ),
    Example(
        "anthropic-credit",
        "Anthropic 400: credit balance too low",
        lambda: classify_response(
            400,
            {},
            _anthropic(
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API. "
                "Please go to Plans & Billing to upgrade or purchase credits.",
            ),
            provider="anthropic",
        ),
    ),
    Example(
        "anthropic-context",
        "Anthropic 400: prompt is too long",
        lambda: classify_response(
            400,
            {},
            _anthropic(
                "invalid_request_error", "prompt is too long: 208656 tokens > 200000 maximum"
            ),
            provider="anthropic",
        ),
    ),
    Example(
        "openai-quota",
        "OpenAI 429 insufficient_quota (not a rate limit)",
        lambda: classify_response(
            429,
            {"x-should-retry": "true"},
            _openai(
                "You exceeded your current quota, please check your plan and billing details.",
                "insufficient_quota",
                "insufficient_quota",
            ),
            provider="openai",
        ),
    ),
    Example(
        "openai-too-large",
        "OpenAI 429 'Request too large' (never fits a minute)",
        lambda: classify_response(
            429,
            {},
            _openai(
                "Request too large for gpt-4o in organization org-x on tokens per min (TPM): "
                "Limit 30000, Requested 31538.",
                "tokens",
                "rate_limit_exceeded",
            ),
            provider="openai",
        ),
    ),
    Example(
        "gemini-per-minute",
        "Gemini 429, quotaId …PerMinute…",
        lambda: classify_response(
            429,
            {},
            _gemini_quota("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
            provider="gemini",
        ),
    ),
    Example(
        "gemini-per-day",
        "Gemini 429, quotaId …PerDay… (retryDelay 36s is not the real wait)",
        lambda: classify_response(
            429,
            {},
            _gemini_quota("GenerateRequestsPerDayPerProjectPerModel-FreeTier"),
            provider="gemini",
        ),
    ),
    Example(
        "connection-refused",
        "ConnectionRefusedError",
        lambda: classify(ConnectionRefusedError(111, "Connection refused")),
    ),
    Example(
        "claude-code-usage-limit",
        "Claude Code result: hit your limit · resets 4:50am (Europe/Rome)",
        lambda: classify_output(
            json.dumps(
                {
                    "type": "result",
                    "subtype": "success",
                    "is_error": True,
                    "result": "You've hit your limit · resets 4:50am (Europe/Rome)",
                }
            ),
            agent="claude-code",
            exit_code=1,
        ),
    ),
    Example(
        "aider-quota",
        "Aider (exit 0): litellm.RateLimitError … insufficient_quota",
        lambda: classify_output(
            "litellm.RateLimitError: RateLimitError: OpenAIException - You exceeded your current "
            "quota, please check your plan and billing details.\n"
            "The API provider has rate limited you. Try again later or check your quotas.\n",
            agent="aider",
            exit_code=0,
        ),
    ),
)
