"""Google Gemini (AI Studio, Vertex, Cloud Code): real google.rpc.Status error bodies, hidden
failures in successful responses, and exceptions raised by the google-genai SDK.

Every case is built from a public source cited in the comment above it. Bodies and messages are
quoted from the provider documentation or from the issue thread that reported them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

import httpx2
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from tests.classify.expect import (
    UNCHECKED,
    Handler,
    ResponseCase,
    SdkCase,
    assert_response_case,
    assert_sdk_case,
    raising,
    respond,
)

import backstay
from backstay import FailureKind

K = FailureKind
UTC = dt.UTC
NOW = dt.datetime(2026, 8, 1, 12, 0, 0, tzinfo=UTC)
PROVIDER = "gemini"
FAKE_KEY = "test-canary-0000000000"
MODEL = "gemini-2.5-flash"
RPC = "type.googleapis.com/google.rpc."


def status_body(code: int, status: str, message: str, *details: Mapping[str, Any]) -> dict:
    """The google.rpc.Status shape the Gemini API returns."""
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = [dict(d) for d in details]
    return {"error": error}


def quota_violation(metric: str, quota_id: str, model: str, value: str | None = None) -> dict:
    violation: dict[str, Any] = {
        "quotaMetric": metric,
        "quotaId": quota_id,
        "quotaDimensions": {"location": "global", "model": model},
    }
    if value is not None:
        violation["quotaValue"] = value
    return violation


HELP = {
    "@type": RPC + "Help",
    "links": [
        {
            "description": "Learn more about Gemini API quotas",
            "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
        }
    ],
}
QUOTA_MESSAGE = (
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
)

# RooCodeInc/Roo-Code#3883: per-minute input-token quota with RetryInfo 26s
PER_MINUTE_429 = status_body(
    429,
    "RESOURCE_EXHAUSTED",
    QUOTA_MESSAGE,
    {
        "@type": RPC + "QuotaFailure",
        "violations": [
            quota_violation(
                "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
                "GenerateContentInputTokensPerModelPerMinute-FreeTier",
                "gemini-2.5-flash",
                "250000",
            )
        ],
    },
    HELP,
    {"@type": RPC + "RetryInfo", "retryDelay": "26s"},
)
# diegosouzapw/OmniRoute#9504: a per-day quota whose RetryInfo still says 36s
PER_DAY_429 = status_body(
    429,
    "RESOURCE_EXHAUSTED",
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. "
    "To monitor your current usage, head to: https://ai.dev/rate-limit. \n* Quota exceeded for "
    "metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 20, "
    "model: gemini-3.6-flash\nPlease retry in 36.429760048s.",
    {
        "@type": RPC + "QuotaFailure",
        "violations": [
            {
                "quotaMetric": (
                    "generativelanguage.googleapis.com/generate_content_free_tier_requests"
                ),
                "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                "quotaDimensions": "[MaxDepth]",
                "quotaValue": "20",
            }
        ],
    },
    {"@type": RPC + "RetryInfo", "retryDelay": "36s"},
)
PER_DAY_429_AT = dt.datetime(2026, 8, 1, 6, 14, 23, 628000, tzinfo=UTC)
# continuedev/continue#9570: "limit: 0" — the model or tier is not enabled at all
LIMIT_ZERO_429 = status_body(
    429,
    "RESOURCE_EXHAUSTED",
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. "
    "To monitor your current usage, head to: https://ai.dev/rate-limit. \n* Quota exceeded for "
    "metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, "
    "model: gemini-3-pro\n* Quota exceeded for metric: "
    "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count, limit: 0, "
    "model: gemini-3-pro\nPlease retry in 45.578569677s.",
    HELP,
)
# google-gemini/gemini-cli#10513: Cloud Code reason RATE_LIMIT_EXCEEDED, quota_limit per day
CLOUD_CODE_PER_DAY_429 = {
    "error": {
        "code": 429,
        "message": "Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit 'Gemini "
        "2.5 Pro Requests per day per user per tier' of service 'cloudcode-pa.googleapis.com' for "
        "consumer 'project_number:681255809395'.",
        "errors": [
            {
                "message": "Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit "
                "'Gemini 2.5 Pro Requests per day per user per tier' of service "
                "'cloudcode-pa.googleapis.com' for consumer 'project_number:681255809395'.",
                "domain": "global",
                "reason": "rateLimitExceeded",
            }
        ],
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {
                "@type": RPC + "ErrorInfo",
                "reason": "RATE_LIMIT_EXCEEDED",
                "domain": "googleapis.com",
                "metadata": {
                    "quota_metric": "cloudcode-pa.googleapis.com/gemini_2_5_pro_requests",
                    "quota_limit": "Gemini25ProRequestsPerDayPerUserPerTier",
                    "service": "cloudcode-pa.googleapis.com",
                    "consumer": "projects/681255809395",
                },
            }
        ],
    }
}
# google-gemini/deprecated-generative-ai-python#206: per-minute ErrorInfo, quota_limit_value "0"
REGION_QUOTA_ZERO_429 = status_body(
    429,
    "RESOURCE_EXHAUSTED",
    "Quota exceeded for quota metric 'Generate Content API requests per minute' and limit "
    "'GenerateContent request limit per minute for a region' of service "
    "'generativelanguage.googleapis.com' for consumer 'project_number:99429294349'.",
    {
        "@type": RPC + "ErrorInfo",
        "reason": "RATE_LIMIT_EXCEEDED",
        "domain": "googleapis.com",
        "metadata": {
            "service": "generativelanguage.googleapis.com",
            "quota_metric": "generativelanguage.googleapis.com/generate_content_requests",
            "quota_location": "us-west4",
            "quota_limit": "GenerateContentRequestsPerMinutePerProjectPerRegion",
            "quota_limit_value": "0",
            "consumer": "projects/99429294349",
        },
    },
)
API_KEY_INVALID_400 = status_body(
    400,
    "INVALID_ARGUMENT",
    "API key not valid. Please pass a valid API key.",
    {
        "@type": RPC + "ErrorInfo",
        "reason": "API_KEY_INVALID",
        "domain": "googleapis.com",
        "metadata": {"service": "generativelanguage.googleapis.com"},
    },
    {
        "@type": RPC + "LocalizedMessage",
        "locale": "en-US",
        "message": "API key not valid. Please pass a valid API key.",
    },
)
GFE_502 = """<!DOCTYPE html>
<html lang=en>
  <meta charset=utf-8>
  <meta name=viewport content="initial-scale=1, minimum-scale=1, width=device-width">
  <title>Error 502 (Server Error)!!1</title>
  <a href=//www.google.com/><span id=logo aria-label=Google></span></a>
  <p><b>502.</b> <ins>That’s an error.</ins>
  <p>The server encountered a temporary error and could not complete your request.
  <p>Please try again in 30 seconds.  <ins>That’s all we know.</ins>"""


@dataclasses.dataclass(frozen=True)
class Case(ResponseCase):
    provider: str = PROVIDER


CASES: list[Case] = [
    # continuedev/continue#9330: a bad API key is a 400 INVALID_ARGUMENT with API_KEY_INVALID (E7)
    Case("400-api-key-invalid", 400, API_KEY_INVALID_400, K.AUTH, False, "ERR_AUTH_INVALID_KEY"),
    # google-gemini/gemini-cli#4692: token overflow is a 400 INVALID_ARGUMENT (E6)
    Case(
        "400-input-token-count",
        400,
        status_body(
            400,
            "INVALID_ARGUMENT",
            "The input token count (2845475) exceeds the maximum number of tokens allowed "
            "(1048576).",
        ),
        K.CONTEXT_LIMIT,
        False,
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # nashsu/llm_wiki#49: a malformed request, INVALID_ARGUMENT with google.rpc.BadRequest
    Case(
        "400-invalid-argument",
        400,
        status_body(
            400,
            "INVALID_ARGUMENT",
            'Invalid JSON payload received. Unknown name "temperature": Cannot find field.',
            {
                "@type": RPC + "BadRequest",
                "fieldViolations": [
                    {
                        "description": 'Invalid JSON payload received. Unknown name "temperature"'
                        ": Cannot find field."
                    }
                ],
            },
        ),
        K.INVALID_REQUEST,
        False,
        "ERR_HTTP_400_BAD_REQUEST",
    ),
    # Xeift/Telegram-Discord-Bot#4: 400 FAILED_PRECONDITION, user location not supported
    Case(
        "400-location-not-supported",
        400,
        status_body(400, "FAILED_PRECONDITION", "User location is not supported for the API use."),
        K.AUTH,
        False,
        "ERR_AUTH_REGION_UNSUPPORTED",
    ),
    # ai.google.dev/gemini-api/docs/generate-content/api-errors: 400 FAILED_PRECONDITION, free tier
    # not available in the country (enable billing)
    Case(
        "400-free-tier-not-in-country",
        400,
        status_body(
            400,
            "FAILED_PRECONDITION",
            "Gemini API free tier is not available in your country. Please enable billing on "
            "your project in Google AI Studio.",
        ),
        K.AUTH,
        False,
        "ERR_AUTH_REGION_UNSUPPORTED",
    ),
    # google/generative-ai-docs#356: 403 PERMISSION_DENIED, ErrorInfo CONSUMER_SUSPENDED
    Case(
        "403-consumer-suspended",
        403,
        status_body(
            403,
            "PERMISSION_DENIED",
            "Permission denied: Consumer 'api_key:AIzaSyAhTarnL1PaQn_yu_uVf0gia9wUyJx8RSI' has "
            "been suspended.",
            {
                "@type": RPC + "ErrorInfo",
                "reason": "CONSUMER_SUSPENDED",
                "domain": "googleapis.com",
                "metadata": {
                    "service": "generativelanguage.googleapis.com",
                    "consumer": "projects/578829824020",
                },
            },
        ),
        K.AUTH,
        False,
        "ERR_HTTP_403_FORBIDDEN",
    ),
    # continuedev/continue#11541: 403 PERMISSION_DENIED, key reported as leaked
    Case(
        "403-key-leaked",
        403,
        status_body(
            403,
            "PERMISSION_DENIED",
            "Your API key was reported as leaked. Please use another API key.",
        ),
        K.AUTH,
        False,
    ),
    # wwardaww/gnome-gemini-ai#22: 404 NOT_FOUND for a retired model
    Case(
        "404-model-not-found",
        404,
        status_body(
            404,
            "NOT_FOUND",
            "models/gemini-pro is not found for API version v1beta, or is not supported for "
            "generateContent. Call ListModels to see the list of available models and their "
            "supported methods.",
        ),
        K.INVALID_REQUEST,
        False,
        "ERR_LLM_MODEL_NOT_FOUND",
    ),
    # google-genai HttpRetryOptions default http_status_codes include 408 (retried as transient)
    Case("408-request-timeout", 408, "", K.TIMEOUT, True, "ERR_HTTP_408_REQUEST_TIMEOUT"),
    # googleapis google/rpc/code.proto: ALREADY_EXISTS maps to HTTP 409
    Case(
        "409-already-exists",
        409,
        status_body(409, "ALREADY_EXISTS", "Requested entity already exists"),
        K.INVALID_REQUEST,
        False,
        "ERR_HTTP_409_CONFLICT",
    ),
    # google-gemini/gemini-cli#13776: 413 request body over the byte limit
    Case(
        "413-request-body-size",
        413,
        {
            "error": {
                "message": "Maximum request body size 1048576 exceeded, actual body size 1056562",
                "code": 413,
                "status": "Request Entity Too Large",
            }
        },
        K.INVALID_REQUEST,
        False,
        "ERR_HTTP_413_REQUEST_TOO_LARGE",
    ),
    # google-genai errors.APIError.raise_error: any 4xx → ClientError; a bare 422 is a bad request
    Case("422-unprocessable", 422, "", K.INVALID_REQUEST, False, "ERR_HTTP_422_UNPROCESSABLE"),
    # discuss.ai.google.dev/t/183654 ("API update: Depleted prepay credits now return HTTP 402"):
    # 402 RESOURCE_EXHAUSTED, prepayment credits depleted; not retriable until credits are added
    Case(
        "402-prepay-credits-depleted",
        402,
        status_body(
            402,
            "RESOURCE_EXHAUSTED",
            "Your prepayment credits are depleted. Please go to AI Studio at    "
            "https://ai.studio/projects to manage your project and billing. Learn more at "
            "https://ai.google.dev/gemini-api/docs/billing#prepay.",
        ),
        K.QUOTA_EXHAUSTED,
        False,
        "ERR_LLM_CREDIT_BALANCE",
    ),
    # discuss.ai.google.dev/t/170005: before that change the same condition came as a 429
    Case(
        "429-prepay-credits-depleted",
        429,
        status_body(429, "RESOURCE_EXHAUSTED", "Your prepayment credits are depleted"),
        K.QUOTA_EXHAUSTED,
        False,
        "ERR_LLM_CREDIT_BALANCE",
    ),
    # RooCodeInc/Roo-Code#3883: per-minute quota → a rate limit, despite "exceeded your quota"
    Case(
        "429-per-minute-quota",
        429,
        PER_MINUTE_429,
        K.RATE_LIMIT,
        True,
        "ERR_HTTP_429_RATE_LIMITED",
    ),
    # diegosouzapw/OmniRoute#9504: per-day quotaId → quota until the reset
    Case("429-per-day-quota", 429, PER_DAY_429, K.QUOTA_EXHAUSTED, False, "ERR_LLM_DAILY_QUOTA"),
    # continuedev/continue#9570: "limit: 0" → the model/tier is disabled, never retry
    Case("429-limit-zero", 429, LIMIT_ZERO_429, K.QUOTA_EXHAUSTED, False, "ERR_LLM_QUOTA_ZERO"),
    # google-gemini/gemini-cli#10513: Cloud Code RATE_LIMIT_EXCEEDED whose quota_limit is per day
    Case(
        "429-cloud-code-per-day",
        429,
        CLOUD_CODE_PER_DAY_429,
        K.QUOTA_EXHAUSTED,
        False,
        "ERR_LLM_DAILY_QUOTA",
    ),
    # google-gemini/deprecated-generative-ai-python#206: quota_limit_value "0" in ErrorInfo
    Case(
        "429-quota-limit-value-zero",
        429,
        REGION_QUOTA_ZERO_429,
        K.QUOTA_EXHAUSTED,
        False,
        "ERR_LLM_QUOTA_ZERO",
    ),
    # googleapis/python-genai#2065: a bare RESOURCE_EXHAUSTED without details stays a rate limit
    Case(
        "429-bare-resource-exhausted",
        429,
        status_body(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
        K.RATE_LIMIT,
        True,
        "ERR_HTTP_429_RATE_LIMITED",
    ),
    # jenslys/opencode-gemini-auth#25: Cloud Code capacity 429 that resets after seconds
    Case(
        "429-cloud-code-capacity",
        429,
        status_body(
            429,
            "RESOURCE_EXHAUSTED",
            "You have exhausted your capacity on this model. Your quota will reset after 27s.",
            {
                "@type": RPC + "ErrorInfo",
                "reason": "RATE_LIMIT_EXCEEDED",
                "domain": "cloudcode-pa.googleapis.com",
                "metadata": {"uiMessage": "true", "model": "gemini-3-flash-preview"},
            },
        ),
        K.RATE_LIMIT,
        True,
    ),
    # google-gemini/gemini-cli#14831: Vertex 429 with errors[].reason rateLimitExceeded
    Case(
        "429-vertex-resource-exhausted",
        429,
        {
            "error": {
                "code": 429,
                "message": "Resource exhausted. Please try again later. Please refer to "
                "https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more "
                "details.",
                "errors": [
                    {
                        "message": "Resource exhausted. Please try again later. Please refer to "
                        "https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 "
                        "for more details.",
                        "domain": "global",
                        "reason": "rateLimitExceeded",
                    }
                ],
                "status": "RESOURCE_EXHAUSTED",
            }
        },
        K.RATE_LIMIT,
        True,
        "ERR_HTTP_429_RATE_LIMITED",
        provider="vertex",
    ),
    # ai.google.dev/gemini-api/docs/generate-content/api-errors: 499 CANCELLED, closed by the caller
    Case(
        "499-cancelled",
        499,
        status_body(499, "CANCELLED", "The operation was cancelled."),
        K.CANCELLED,
        False,
        "ERR_HTTP_499_CLIENT_CLOSED",
    ),
    # PublicAffairs/openai-gemini#15: 500 INTERNAL
    Case(
        "500-internal",
        500,
        status_body(
            500,
            "INTERNAL",
            "An internal error has occurred. Please retry or report in "
            "https://developers.generativeai.google/guide/troubleshooting",
        ),
        K.SERVER_ERROR,
        True,
        "ERR_HTTP_500_INTERNAL",
    ),
    # google-gemini/gemini-cli#4646: Google front-end HTML 502
    Case(
        "502-gfe-html",
        502,
        GFE_502,
        K.SERVER_ERROR,
        True,
        "ERR_HTTP_502_BAD_GATEWAY",
        {"content-type": "text/html; charset=UTF-8"},
    ),
    # google-gemini/gemini-cli#12831: 503 UNAVAILABLE "The model is overloaded."
    Case(
        "503-model-overloaded",
        503,
        status_body(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
        K.SERVER_ERROR,
        True,
        "ERR_HTTP_503_UNAVAILABLE",
    ),
    # letta-ai/letta#2861 and the api-errors page: 504 DEADLINE_EXCEEDED
    Case(
        "504-deadline-exceeded",
        504,
        status_body(504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
        K.TIMEOUT,
        True,
        "ERR_HTTP_504_GATEWAY_TIMEOUT",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_response_classifies_as_documented(case: Case) -> None:
    assert_response_case(case, provider=case.provider, now=NOW)


# ---------------------------------------------------------------------------------------------
# Wait hints and per-day resets


def test_per_minute_quota_uses_retry_info() -> None:
    # RooCodeInc/Roo-Code#3883: RetryInfo.retryDelay "26s"
    failure = backstay.classify_response(429, {}, PER_MINUTE_429, provider=PROVIDER, now=NOW)
    assert failure.retry_after_s == pytest.approx(26.0)


def test_retry_after_header_beats_retry_info() -> None:
    # header precedence (retry-after before RetryInfo) on the Roo-Code#3883 body
    failure = backstay.classify_response(
        429, {"retry-after": "40"}, PER_MINUTE_429, provider=PROVIDER, now=NOW
    )
    assert failure.retry_after_s == pytest.approx(40.0)


def test_per_day_quota_ignores_short_retry_info() -> None:
    # diegosouzapw/OmniRoute#9504: the 36s RetryInfo on a per-day quota is not a real wait
    failure = backstay.classify_response(
        429, {}, PER_DAY_429, provider=PROVIDER, now=PER_DAY_429_AT
    )
    assert failure.retry_after_s is None or failure.retry_after_s > 36.5


def test_per_day_quota_resets_at_pacific_midnight() -> None:
    # ai.google.dev/gemini-api/docs/rate-limits: requests-per-day quotas reset at midnight
    # Pacific time; 2026-08-01 06:14 UTC is 23:14 PDT, so the next reset is 07:00 UTC
    failure = backstay.classify_response(
        429, {}, PER_DAY_429, provider=PROVIDER, now=PER_DAY_429_AT
    )
    assert failure.resets_at == dt.datetime(2026, 8, 1, 7, 0, tzinfo=UTC)


def test_limit_zero_offers_no_short_wait() -> None:
    # continuedev/continue#9570: "Please retry in 45.57s" cannot help a zero quota
    failure = backstay.classify_response(429, {}, LIMIT_ZERO_429, provider=PROVIDER, now=NOW)
    assert failure.retry_after_s is None or failure.retry_after_s > 46


# ---------------------------------------------------------------------------------------------
# Successful bodies that hide a failure


SAFETY_RATINGS = [
    {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT", "probability": "HIGH", "blocked": True},
]


@pytest.mark.parametrize(
    "body",
    [
        # gbaptista/gemini-ai#9: promptFeedback.blockReason SAFETY and no candidates at all
        pytest.param(
            {
                "promptFeedback": {
                    "blockReason": "SAFETY",
                    "safetyRatings": [
                        {
                            "category": "HARM_CATEGORY_SEXUALLY_EXPLICIT",
                            "probability": "NEGLIGIBLE",
                        },
                        {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
                        {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
                        {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"},
                    ],
                }
            },
            id="prompt-feedback-block-reason-safety",
        ),
        # CherryHQ/cherry-studio#664: candidates[].finishReason SAFETY with a blocked rating
        pytest.param(
            {
                "candidates": [{"finishReason": "SAFETY", "safetyRatings": SAFETY_RATINGS}],
                "usageMetadata": {
                    "promptTokenCount": 752,
                    "candidatesTokenCount": 16,
                    "totalTokenCount": 768,
                },
            },
            id="finish-reason-safety",
        ),
        # zuisong/gemini-openai-proxy#57: "candidate was blocked due to recitation"
        pytest.param(
            {
                "candidates": [
                    {"finishReason": "RECITATION", "index": 0, "safetyRatings": SAFETY_RATINGS[:3]}
                ]
            },
            id="finish-reason-recitation",
        ),
        # CherryHQ/cherry-studio#696 body, as one element of the JSON array that
        # streamGenerateContent returns without alt=sse
        pytest.param(
            [
                {
                    "candidates": [{"finishReason": "SAFETY", "safetyRatings": SAFETY_RATINGS}],
                    "modelVersion": "gemini-2.0-flash-exp",
                }
            ],
            id="stream-array-finish-reason-safety",
        ),
    ],
)
def test_hidden_content_block_in_success_body(body: object) -> None:
    failure = backstay.check_response(200, {}, body, provider=PROVIDER, now=NOW)
    assert failure is not None
    assert (failure.kind, failure.code) == (K.CONTENT_POLICY, "ERR_LLM_CONTENT_FILTER")


def test_clean_success_is_none() -> None:
    # ai.google.dev/api/generate-content#v1beta.GenerateContentResponse: finishReason STOP
    body = {
        "candidates": [
            {
                "content": {"parts": [{"text": "Hello! How can I help?"}], "role": "model"},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 7, "totalTokenCount": 9},
        "modelVersion": MODEL,
    }
    assert backstay.check_response(200, {}, body, provider=PROVIDER) is None


# ---------------------------------------------------------------------------------------------
# Exceptions raised by the real google-genai SDK


def _sdk_error(handler: Handler) -> BaseException:
    with httpx2.Client(transport=httpx2.MockTransport(handler)) as http:
        client = genai.Client(
            api_key=FAKE_KEY, http_options=genai_types.HttpOptions(httpx_client=http)
        )
        try:
            client.models.generate_content(model=MODEL, contents="hi")
        except Exception as exc:  # the SDK lets transport exceptions through unwrapped
            return exc
        finally:
            client.close()
    raise AssertionError("the SDK raised nothing")


SDK_CASES: list[SdkCase] = [
    # RooCodeInc/Roo-Code#3883 → errors.ClientError 429 RESOURCE_EXHAUSTED (per minute)
    SdkCase(
        "ClientError-429-per-minute",
        lambda: _sdk_error(respond(429, PER_MINUTE_429)),
        K.RATE_LIMIT,
        True,
        429,
        "ERR_HTTP_429_RATE_LIMITED",
    ),
    # diegosouzapw/OmniRoute#9504 → errors.ClientError 429 (per day)
    SdkCase(
        "ClientError-429-per-day",
        lambda: _sdk_error(respond(429, PER_DAY_429)),
        K.QUOTA_EXHAUSTED,
        False,
        429,
        "ERR_LLM_DAILY_QUOTA",
    ),
    # continuedev/continue#9570 → errors.ClientError 429 "limit: 0"
    SdkCase(
        "ClientError-429-limit-zero",
        lambda: _sdk_error(respond(429, LIMIT_ZERO_429)),
        K.QUOTA_EXHAUSTED,
        False,
        429,
        "ERR_LLM_QUOTA_ZERO",
    ),
    # continuedev/continue#10077 / #9330 → errors.ClientError 400 API_KEY_INVALID
    SdkCase(
        "ClientError-400-api-key-invalid",
        lambda: _sdk_error(respond(400, API_KEY_INVALID_400)),
        K.AUTH,
        False,
        400,
        "ERR_AUTH_INVALID_KEY",
    ),
    # poenl/gemini-api#4: "400 FAILED_PRECONDITION. {... User location is not supported ...}"
    SdkCase(
        "ClientError-400-failed-precondition",
        lambda: _sdk_error(
            respond(
                400,
                status_body(
                    400, "FAILED_PRECONDITION", "User location is not supported for the API use."
                ),
            )
        ),
        K.AUTH,
        False,
        400,
        "ERR_AUTH_REGION_UNSUPPORTED",
    ),
    # google-gemini/gemini-cli#4692 → errors.ClientError 400 token overflow
    SdkCase(
        "ClientError-400-token-overflow",
        lambda: _sdk_error(
            respond(
                400,
                status_body(
                    400,
                    "INVALID_ARGUMENT",
                    "The input token count (2845475) exceeds the maximum number of tokens "
                    "allowed (1048576).",
                ),
            )
        ),
        K.CONTEXT_LIMIT,
        False,
        400,
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # google-gemini/gemini-cli#12831: "google.genai.errors.ServerError: 503 UNAVAILABLE."
    SdkCase(
        "ServerError-503-overloaded",
        lambda: _sdk_error(
            respond(
                503,
                status_body(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
            )
        ),
        K.SERVER_ERROR,
        True,
        503,
        "ERR_HTTP_503_UNAVAILABLE",
    ),
    # PublicAffairs/openai-gemini#15 → errors.ServerError 500 INTERNAL
    SdkCase(
        "ServerError-500-internal",
        lambda: _sdk_error(
            respond(
                500,
                status_body(
                    500,
                    "INTERNAL",
                    "An internal error has occurred. Please retry or report in "
                    "https://developers.generativeai.google/guide/troubleshooting",
                ),
            )
        ),
        K.SERVER_ERROR,
        True,
        500,
        "ERR_HTTP_500_INTERNAL",
    ),
    # google-gemini/gemini-cli#4646: non-JSON 502 → ServerError with {message: html, status}
    SdkCase(
        "ServerError-502-html",
        lambda: _sdk_error(respond(502, GFE_502, ctype="text/html; charset=UTF-8")),
        K.SERVER_ERROR,
        True,
        502,
        "ERR_HTTP_502_BAD_GATEWAY",
    ),
    # ai.google.dev api-errors page: 499 CANCELLED → errors.ClientError
    SdkCase(
        "ClientError-499-cancelled",
        lambda: _sdk_error(
            respond(499, status_body(499, "CANCELLED", "The operation was cancelled."))
        ),
        K.CANCELLED,
        False,
        499,
        "ERR_HTTP_499_CLIENT_CLOSED",
    ),
    # google-gemini/deprecated-generative-ai-python#294 "504 Deadline Exceeded" → ServerError
    SdkCase(
        "ServerError-504-deadline",
        lambda: _sdk_error(
            respond(
                504,
                status_body(
                    504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."
                ),
            )
        ),
        K.TIMEOUT,
        True,
        504,
        "ERR_HTTP_504_GATEWAY_TIMEOUT",
    ),
    # google-genai _api_client.py lists httpx2.TimeoutException among transport errors it lets
    # through (retried only when opted in); no APIError wraps it
    SdkCase(
        "ReadTimeout",
        lambda: _sdk_error(raising(httpx2.ReadTimeout, "The read operation timed out")),
        K.TIMEOUT,
        True,
        None,
    ),
    # google-genai _api_client.py: httpx2.ConnectError is likewise passed through unwrapped
    SdkCase(
        "ConnectError",
        lambda: _sdk_error(raising(httpx2.ConnectError, "[Errno 111] Connection refused")),
        K.NETWORK,
        True,
        None,
    ),
]


@pytest.mark.parametrize("case", SDK_CASES, ids=lambda c: c.id)
def test_sdk_exception_classifies_as_documented(case: SdkCase) -> None:
    # status None: a transport error the SDK let through unwrapped, which names neither a
    # status nor the provider, so neither is expected of it
    if case.status:
        assert_sdk_case(case, status=case.status, provider=PROVIDER, now=NOW)
    else:
        assert_sdk_case(case, status=UNCHECKED, provider=UNCHECKED, now=NOW)


def test_sdk_per_minute_keeps_retry_info() -> None:
    # RooCodeInc/Roo-Code#3883: RetryInfo survives inside errors.ClientError.details
    exc = _sdk_error(respond(429, PER_MINUTE_429))
    assert backstay.classify(exc, now=NOW).retry_after_s == pytest.approx(26.0)


def test_directly_built_client_error() -> None:
    # google-genai errors.APIError(code, response_json) as the SDK builds it in raise_error
    exc = genai_errors.ClientError(400, API_KEY_INVALID_400)
    failure = backstay.classify(exc, now=NOW)
    assert (failure.kind, failure.code, failure.status) == (K.AUTH, "ERR_AUTH_INVALID_KEY", 400)
