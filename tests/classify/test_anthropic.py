"""Anthropic (Claude API): real error responses, stream errors, hidden failures and SDK exceptions.

Every case is built from a public source cited in the comment above it. Bodies and messages are
quoted from the provider documentation or from the issue thread that reported them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

import anthropic
import httpx2
import pytest
from tests.classify.expect import (
    Handler,
    SdkCase,
    WaitCase,
    assert_response_case,
    assert_sdk_case,
    assert_wait_case,
    raising,
    respond,
)
from tests.classify.expect import ResponseCase as Case

import backstay
from backstay import FailureKind

K = FailureKind
UTC = dt.UTC
NOW = dt.datetime(2026, 8, 1, 12, 0, 0, tzinfo=UTC)
PROVIDER = "anthropic"
FAKE_KEY = "sk-ant-test-canary-0000000000"
MODEL = "claude-opus-4-6"


def envelope(err_type: str, message: str, **extra: Any) -> dict[str, Any]:
    """The documented Anthropic error shape: ``{"type": "error", "error": {...}}``."""
    error: dict[str, Any] = {"type": err_type, "message": message}
    error.update(extra)
    return {"type": "error", "error": error, "request_id": "req_011CaxpBxEpLvE6AvvuDD5BW"}


CREDIT_BALANCE = (
    "Your credit balance is too low to access the Anthropic API. "
    "Please go to Plans & Billing to upgrade or purchase credits."
)
ORG_RATE_LIMIT = (
    "This request would exceed the rate limit for your organization "
    "(0dccdde6-f924-4f1b-bb3b-92ef846e0a5b) of 20,000 input tokens per minute. "
    "For details, refer to: https://docs.anthropic.com/en/api/rate-limits. "
    "You can see the response headers for current usage. Please reduce the prompt length or "
    "the maximum tokens requested, or try again later. You may also contact sales at "
    "https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase."
)
ACCOUNT_RATE_LIMIT = "This request would exceed your account's rate limit. Please try again later."
SPEND_CAP = (
    "You have reached your API usage limits: your organization has crossed its monthly API "
    "usage threshold, set based on your organization's API tier. You will regain access on "
    "2026-09-01 at 00:00 UTC."
)
WORKSPACE_LIMIT = (
    "You have reached your specified workspace API usage limits. "
    "You will regain access on 2025-06-01 at 00:00 UTC."
)
CLOUDFLARE_502 = """<!DOCTYPE html>
<html class="no-js" lang="en-US">
<head>
<title>api.anthropic.com | 502: Bad gateway</title>
<meta charset="UTF-8" />
</head>
<body>
<div id="cf-wrapper"><h1><span class="inline-block">Bad gateway</span>
<span class="code-label">Error code 502</span></h1>
<p>The web server reported a bad gateway error.</p>
<span class="cf-footer-item sm:block sm:mb-1"><span>Performance &amp; security by</span>
<a href="https://www.cloudflare.com/5xx-error-landing?utm_source=errorcode_502&amp;utm_campaign=api.anthropic.com">Cloudflare</a></span>
</div>
</body>
</html>"""
CLOUDFLARE_504 = """<!DOCTYPE html>
<html class="no-js" lang="en-US">
<head>
<title>api.anthropic.com | 504: Gateway time-out</title>
<meta charset="UTF-8" />
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />
</head>
<body><div id="cf-wrapper"><h1>Gateway time-out <span>Error code 504</span></h1></div></body>
</html>"""
ENVOY_503 = "upstream connect error or disconnect/reset before headers. reset reason: overflow"


def sse(*events: tuple[str, Mapping[str, Any]]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


MESSAGE_START = {
    "type": "message_start",
    "message": {
        "id": "msg_01XweUBd7ECXzm9ToasRnVL4",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    },
}
STREAM_OVERLOADED = {
    "type": "error",
    "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"},
    "request_id": "req_011Ce3HwQb6vtbs9LQVmh4oe",
}
STREAM_CONTENT_FILTER = {
    "type": "error",
    "error": {
        "details": None,
        "type": "invalid_request_error",
        "message": "Output blocked by content filtering policy",
    },
    "request_id": "req_011CaxpiP7NSqAVnWCHuZz1v",
}

CASES: list[Case] = [
    # sojohnnysaid/project-guide#2: anthropic.BadRequestError 400 "prompt is too long" (E1)
    Case(
        "400-prompt-too-long",
        400,
        envelope("invalid_request_error", "prompt is too long: 208656 tokens > 200000 maximum"),
        K.CONTEXT_LIMIT,
        False,
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # anthropics/claude-code#408: input + max_tokens over the window (lower max_tokens to fit)
    Case(
        "400-input-plus-max-tokens",
        400,
        envelope(
            "invalid_request_error",
            "input length and `max_tokens` exceed context limit: 189136 + 20000 > 204648, "
            "decrease input length or `max_tokens` and try again",
        ),
        K.CONTEXT_LIMIT,
        False,
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # ChatGPTNextWeb/NextChat#4964: max_tokens above the model's output cap is a plain bad request
    Case(
        "400-max-tokens-over-output-cap",
        400,
        envelope(
            "invalid_request_error",
            "max_tokens: 10000 > 4096, which is the maximum allowed number of output tokens "
            "for claude-3-5-sonnet-20240620",
        ),
        K.INVALID_REQUEST,
        False,
        "ERR_HTTP_400_BAD_REQUEST",
    ),
    # anthropics/claude-code#4684: credit balance arrives as a 400 invalid_request_error (E2)
    Case(
        "400-credit-balance",
        400,
        envelope("invalid_request_error", CREDIT_BALANCE),
        K.QUOTA_EXHAUSTED,
        False,
        "ERR_LLM_CREDIT_BALANCE",
    ),
    # anthropics/claude-code#1047: a user-set workspace spend limit is a 400 with a regain date
    Case(
        "400-workspace-spend-limit",
        400,
        envelope("invalid_request_error", WORKSPACE_LIMIT),
        K.QUOTA_EXHAUSTED,
        False,
        "ERR_LLM_SPEND_LIMIT",
    ),
    # anthropics/claude-code#58367: 400 "Output blocked by content filtering policy" (E8)
    Case(
        "400-output-blocked",
        400,
        envelope("invalid_request_error", "Output blocked by content filtering policy"),
        K.CONTENT_POLICY,
        False,
        "ERR_LLM_CONTENT_FILTER",
    ),
    # opencode-websearch#15 (emilsvennesson): 401 authentication_error "invalid x-api-key"
    Case(
        "401-invalid-x-api-key",
        401,
        envelope("authentication_error", "invalid x-api-key"),
        K.AUTH,
        False,
        "ERR_AUTH_INVALID_KEY",
        {"request-id": "req_011CaJCR7Pm2Jh2LbWpBH5Y6"},
    ),
    # platform.claude.com/docs/en/api/errors: 402 billing_error (default message per the API ref)
    Case(
        "402-billing-error",
        402,
        envelope("billing_error", "Billing error"),
        K.QUOTA_EXHAUSTED,
        False,
        "ERR_HTTP_402_PAYMENT_REQUIRED",
    ),
    # anthropics/claude-code#59778: 403 type "forbidden", message "Request not allowed"
    Case(
        "403-request-not-allowed",
        403,
        {"error": {"type": "forbidden", "message": "Request not allowed"}},
        K.AUTH,
        False,
        "ERR_HTTP_403_FORBIDDEN",
    ),
    # mattermost/mattermost-plugin-agents#257: 404 not_found_error "model: <name>"
    Case(
        "404-model-not-found",
        404,
        {
            "type": "error",
            "error": {"type": "not_found_error", "message": "model: claude-3-5-sonnet-20241022 "},
        },
        K.INVALID_REQUEST,
        False,
    ),
    # anthropic 2.x maps a bare 408 to RequestTimeoutError (_error_classes.py, (408, None))
    Case("408-request-timeout", 408, "", K.TIMEOUT, True, "ERR_HTTP_408_REQUEST_TIMEOUT"),
    # platform.claude.com/docs/en/api/errors: 409 conflict_error, "resolve the conflict" first
    Case(
        "409-conflict",
        409,
        envelope(
            "conflict_error",
            "The request conflicts with the current state of a resource.",
        ),
        K.INVALID_REQUEST,
        False,
        "ERR_HTTP_409_CONFLICT",
    ),
    # anthropics/claude-code#10314: Cloudflare 413 request_too_large is a byte limit, not context
    Case(
        "413-request-too-large",
        413,
        {"error": {"type": "request_too_large", "message": "Request exceeds the maximum size"}},
        K.INVALID_REQUEST,
        False,
        "ERR_HTTP_413_REQUEST_TOO_LARGE",
    ),
    # anthropics/claude-code#6380: a 413 whose message names the context window
    Case(
        "413-exceeds-context-window",
        413,
        envelope("invalid_request_error", "Request size exceeds model context window"),
        K.CONTEXT_LIMIT,
        False,
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # platform.claude.com/docs/en/api/errors: invalid_request_error "may also be used for other
    # 4XX status codes" (default message per the API reference); 2.x: UnprocessableEntityError
    Case(
        "422-unprocessable",
        422,
        envelope("invalid_request_error", "Invalid request"),
        K.INVALID_REQUEST,
        False,
    ),
    # OpenHands/OpenHands#9259: 429 rate_limit_error on input tokens per minute
    Case(
        "429-input-tokens-per-minute",
        429,
        envelope("rate_limit_error", ORG_RATE_LIMIT),
        K.RATE_LIMIT,
        True,
        "ERR_HTTP_429_RATE_LIMITED",
        {"retry-after": "17"},
    ),
    # platform.claude.com/docs/api/rate-limits: tier spend cap, 429 enforced_spend_limit_reached
    Case(
        "429-enforced-spend-limit",
        429,
        envelope(
            "rate_limit_error", SPEND_CAP, details={"error_code": "enforced_spend_limit_reached"}
        ),
        K.QUOTA_EXHAUSTED,
        False,
        "ERR_LLM_SPEND_LIMIT",
    ),
    # anthropics/claude-code#11429: Claude subscription window, only the unified headers tell
    Case(
        "429-subscription-unified-rejected",
        429,
        envelope("rate_limit_error", ACCOUNT_RATE_LIMIT),
        K.QUOTA_EXHAUSTED,
        False,
        "ERR_LLM_USAGE_LIMIT",
        {
            "anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-reset": "1762952400",
        },
    ),
    # anthropics/claude-code#71670: the same body without unified headers is a plain rate limit
    Case(
        "429-account-rate-limit",
        429,
        envelope("rate_limit_error", ACCOUNT_RATE_LIMIT),
        K.RATE_LIMIT,
        True,
        "ERR_HTTP_429_RATE_LIMITED",
    ),
    # anthropics/claude-code#39948: a 429 that no wait fixes; extra usage must be enabled first
    Case(
        "429-extra-usage-required",
        429,
        envelope("rate_limit_error", "Extra usage is required for long context requests."),
        K.QUOTA_EXHAUSTED,
        False,
    ),
    # anthropics/claude-code#64982: the same gate worded as usage credits
    Case(
        "429-usage-credits-required",
        429,
        envelope("rate_limit_error", "Usage credits are required for long context requests."),
        K.QUOTA_EXHAUSTED,
        False,
    ),
    # anthropics/anthropic-sdk-typescript#616 shows the header is sent; on a 409 the provider's
    # x-should-retry: true decides (docs: "resolve the conflict" otherwise)
    Case(
        "409-should-retry-true",
        409,
        envelope(
            "conflict_error",
            "The request conflicts with the current state of a resource.",
        ),
        K.SERVER_ERROR,
        True,
        "ERR_PROVIDER_RETRY_REQUESTED",
        {"x-should-retry": "true"},
    ),
    # x-should-retry: false must win over the status (anthropic-sdk-python _should_retry)
    Case(
        "429-should-retry-false",
        429,
        envelope("rate_limit_error", ACCOUNT_RATE_LIMIT),
        K.RATE_LIMIT,
        False,
        "ERR_RATE_LIMIT_NO_RETRY",
        {"x-should-retry": "false"},
    ),
    # anthropics/claude-code#91800: 500 api_error "Internal server error"
    Case(
        "500-api-error",
        500,
        envelope("api_error", "Internal server error"),
        K.SERVER_ERROR,
        True,
        "ERR_HTTP_500_INTERNAL",
    ),
    # same body with x-should-retry: false (header semantics: anthropic-sdk-python _should_retry)
    Case(
        "500-should-retry-false",
        500,
        envelope("api_error", "Internal server error"),
        K.SERVER_ERROR,
        False,
        "ERR_SERVER_ERROR_NO_RETRY",
        {"x-should-retry": "false"},
    ),
    # anthropics/claude-code#6341 and OpenHands/OpenHands#9817: Cloudflare HTML 502
    Case(
        "502-cloudflare-html",
        502,
        CLOUDFLARE_502,
        K.SERVER_ERROR,
        True,
        "ERR_HTTP_502_BAD_GATEWAY",
        {"content-type": "text/html; charset=UTF-8", "server": "cloudflare"},
    ),
    # anthropics/claude-code#7044: envoy plain-text 503
    Case(
        "503-envoy-plain-text",
        503,
        ENVOY_503,
        K.SERVER_ERROR,
        True,
        "ERR_HTTP_503_UNAVAILABLE",
        {"content-type": "text/plain"},
    ),
    # platform.claude.com/docs/en/api/python: GatewayTimeoutError, type timeout_error
    Case(
        "504-timeout-error",
        504,
        envelope("timeout_error", "Request timeout"),
        K.TIMEOUT,
        True,
        "ERR_HTTP_504_GATEWAY_TIMEOUT",
    ),
    # anthropics/claude-code#6781: Cloudflare HTML 504 after one minute
    Case(
        "504-cloudflare-html",
        504,
        CLOUDFLARE_504,
        K.TIMEOUT,
        True,
        "ERR_HTTP_504_GATEWAY_TIMEOUT",
        {"content-type": "text/html; charset=UTF-8", "server": "cloudflare"},
    ),
    # anthropics/claude-code#45071: 529 overloaded_error
    Case(
        "529-overloaded",
        529,
        envelope("overloaded_error", "Overloaded"),
        K.SERVER_ERROR,
        True,
        "ERR_HTTP_529_OVERLOADED",
    ),
    # anthropics/anthropic-sdk-typescript#616: a 529 that carried x-should-retry: true
    Case(
        "529-should-retry-true",
        529,
        envelope("overloaded_error", "Overloaded"),
        K.SERVER_ERROR,
        True,
        "ERR_HTTP_529_OVERLOADED",
        {"x-should-retry": "true"},
    ),
    # anthropic 2.x: ClientClosedRequestError for 499; usually our own cancellation
    Case("499-client-closed", 499, "", K.CANCELLED, False, "ERR_HTTP_499_CLIENT_CLOSED"),
    # Podden/openwebui_anthropic_api_manifold_pipe#19, karthink/gptel#1512: event: error after 200
    Case(
        "200-stream-overloaded-error",
        200,
        sse(("message_start", MESSAGE_START), ("error", STREAM_OVERLOADED)),
        K.SERVER_ERROR,
        True,
        "ERR_LLM_OVERLOADED",
        {"content-type": "text/event-stream"},
    ),
    # anthropics/claude-code#58367 (second entry): content filter delivered inside the stream
    Case(
        "200-stream-content-filter",
        200,
        sse(("message_start", MESSAGE_START), ("error", STREAM_CONTENT_FILTER)),
        K.CONTENT_POLICY,
        False,
        "ERR_LLM_CONTENT_FILTER",
        {"content-type": "text/event-stream"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_response_classifies_as_documented(case: Case) -> None:
    assert_response_case(case, provider=PROVIDER, now=NOW)


# ---------------------------------------------------------------------------------------------
# Wait hints


WAIT_CASES: list[WaitCase] = [
    # platform.claude.com/docs/api/rate-limits: retry-after in seconds on a rate-limit 429
    WaitCase(
        "retry-after-seconds",
        {"retry-after": "17"},
        envelope("rate_limit_error", ORG_RATE_LIMIT),
        17.0,
    ),
    # RFC 9110 §10.2.3: retry-after as an HTTP-date (parsed by the SDK's _parse_retry_after_header)
    WaitCase(
        "retry-after-http-date",
        {"retry-after": "Sat, 01 Aug 2026 12:01:30 GMT"},
        envelope("rate_limit_error", ACCOUNT_RATE_LIMIT),
        90.0,
    ),
    # anthropic-sdk-python _base_client: retry-after-ms takes precedence over retry-after
    WaitCase(
        "retry-after-ms-wins",
        {"retry-after-ms": "1500", "retry-after": "9"},
        envelope("rate_limit_error", ACCOUNT_RATE_LIMIT),
        1.5,
    ),
    # anthropics/anthropic-sdk-typescript#357: a 429 without retry-after; the exhausted dimension's
    # RFC 3339 reset (docs.aws.amazon.com/claude-platform rate-limits headers) tells the wait
    WaitCase(
        "ratelimit-reset-rfc3339",
        {
            "anthropic-ratelimit-input-tokens-limit": "20000",
            "anthropic-ratelimit-input-tokens-remaining": "0",
            "anthropic-ratelimit-input-tokens-reset": "2026-08-01T12:00:42Z",
            "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "49",
            "anthropic-ratelimit-requests-reset": "2026-08-01T12:00:01Z",
        },
        envelope("rate_limit_error", ORG_RATE_LIMIT),
        42.0,
    ),
    # learn.microsoft.com dev-proxy "anthropic-529-overloaded-error": on a 529, use retry-after
    # "if it's there"
    WaitCase(
        "529-retry-after",
        {"retry-after": "5"},
        envelope("overloaded_error", "Overloaded"),
        5.0,
        529,
    ),
]


@pytest.mark.parametrize("case", WAIT_CASES, ids=lambda c: c.id)
def test_retry_after_hint(case: WaitCase) -> None:
    assert_wait_case(case, provider=PROVIDER, now=NOW)


def test_spend_cap_resets_at_regain_date() -> None:
    # platform.claude.com/docs/api/rate-limits: "You will regain access on 2026-09-01 at 00:00 UTC."
    body = envelope(
        "rate_limit_error", SPEND_CAP, details={"error_code": "enforced_spend_limit_reached"}
    )
    failure = backstay.classify_response(429, {}, body, provider=PROVIDER, now=NOW)
    assert failure.resets_at == dt.datetime(2026, 9, 1, 0, 0, tzinfo=UTC)


def test_workspace_limit_resets_at_regain_date() -> None:
    # anthropics/claude-code#1047: the 400 names the date access returns
    now = dt.datetime(2025, 5, 11, 1, 10, 48, tzinfo=UTC)
    body = envelope("invalid_request_error", WORKSPACE_LIMIT)
    failure = backstay.classify_response(400, {}, body, provider=PROVIDER, now=now)
    assert failure.resets_at == dt.datetime(2025, 6, 1, 0, 0, tzinfo=UTC)


def test_subscription_limit_resets_at_unified_reset() -> None:
    # anthropics/claude-code#11429: "Claude AI usage limit reached|1762952400"
    now = dt.datetime(2025, 11, 11, 16, 40, 6, tzinfo=UTC)
    headers = {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": "1762952400",
    }
    body = envelope("rate_limit_error", ACCOUNT_RATE_LIMIT)
    failure = backstay.classify_response(429, headers, body, provider=PROVIDER, now=now)
    assert failure.resets_at == dt.datetime(2025, 11, 12, 13, 0, tzinfo=UTC)


def test_spend_cap_has_no_short_retry_hint() -> None:
    # platform.claude.com/docs/api/rate-limits: the spend-cap 429 has no retry-after; waiting
    # seconds never helps, so no short wait may be offered
    body = envelope(
        "rate_limit_error", SPEND_CAP, details={"error_code": "enforced_spend_limit_reached"}
    )
    failure = backstay.classify_response(429, {}, body, provider=PROVIDER, now=NOW)
    assert failure.retry_after_s is None or failure.retry_after_s > 86_400


# ---------------------------------------------------------------------------------------------
# Successful bodies that hide a failure


REFUSAL_MESSAGE = {
    "id": "msg_01Aq9w938a90dw8q",
    "type": "message",
    "role": "assistant",
    "model": MODEL,
    "content": [{"type": "text", "text": "I can't help with that."}],
    "stop_reason": "refusal",
    "stop_sequence": None,
    "usage": {"input_tokens": 42, "output_tokens": 8},
}
WINDOW_EXCEEDED_MESSAGE = {**REFUSAL_MESSAGE, "stop_reason": "model_context_window_exceeded"}
CLEAN_MESSAGE = {
    "id": "msg_011uEcKeeW7pu1UFPyrA2Wcj",
    "type": "message",
    "role": "assistant",
    "model": "claude-3-5-sonnet-20240620",
    "content": [{"type": "text", "text": "Hello! How can I assist you today?"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 12},
}
CLEAN_HEADERS = {
    "content-type": "application/json",
    "anthropic-ratelimit-requests-limit": "1000",
    "anthropic-ratelimit-requests-remaining": "999",
    "anthropic-ratelimit-requests-reset": "2025-08-21T12:40:59Z",
    "request-id": "req_011CSLsW7mFqvHHnzrKdKjAE",
}


@pytest.mark.parametrize(
    ("body", "kind", "code"),
    [
        # platform.claude.com/docs/en/build-with-claude/handling-stop-reasons: stop_reason refusal
        pytest.param(REFUSAL_MESSAGE, K.CONTENT_POLICY, "ERR_LLM_REFUSAL", id="stop-refusal"),
        # same page: stop_reason model_context_window_exceeded arrives with HTTP 200
        pytest.param(
            WINDOW_EXCEEDED_MESSAGE,
            K.CONTEXT_LIMIT,
            "ERR_LLM_CONTEXT_LENGTH",
            id="stop-context-window-exceeded",
        ),
        # streaming twin: message_delta carries the stop_reason (docs: messages-streaming)
        pytest.param(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "refusal", "stop_sequence": None},
                "usage": {"output_tokens": 8},
            },
            K.CONTENT_POLICY,
            "ERR_LLM_REFUSAL",
            id="message-delta-refusal",
        ),
    ],
)
def test_hidden_failure_in_success_body(body: object, kind: FailureKind, code: str) -> None:
    failure = backstay.check_response(200, {}, body, provider=PROVIDER, now=NOW)
    assert failure is not None
    assert (failure.kind, failure.code) == (kind, code)


def test_clean_success_is_none() -> None:
    # rdrr.io tidyllm fixture api.anthropic.com/v1/messages-e050b5-POST.R: a real 200 with headers
    assert backstay.check_response(200, CLEAN_HEADERS, CLEAN_MESSAGE, provider=PROVIDER) is None


# ---------------------------------------------------------------------------------------------
# Exceptions raised by the real anthropic SDK, driven through a mock transport


def _sdk_error(handler: Handler, *, stream: bool = False) -> BaseException:
    with (
        httpx2.Client(transport=httpx2.MockTransport(handler)) as http,
        anthropic.Anthropic(api_key=FAKE_KEY, max_retries=0, http_client=http) as client,
    ):
        try:
            if stream:
                for _event in client.messages.create(
                    model=MODEL,
                    max_tokens=64,
                    messages=[{"role": "user", "content": "hi"}],
                    stream=True,
                ):
                    pass
            else:
                client.messages.create(
                    model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
                )
        except anthropic.AnthropicError as exc:
            return exc
    raise AssertionError("the SDK raised nothing")


SDK_CASES: list[SdkCase] = [
    # anthropics/claude-code#45071: 529 → OverloadedError
    SdkCase(
        "OverloadedError-529",
        lambda: _sdk_error(respond(529, envelope("overloaded_error", "Overloaded"))),
        K.SERVER_ERROR,
        True,
        529,
        "ERR_HTTP_529_OVERLOADED",
    ),
    # platform.claude.com/docs/api/rate-limits → EnforcedSpendLimitReachedError(RateLimitError)
    SdkCase(
        "EnforcedSpendLimitReachedError-429",
        lambda: _sdk_error(
            respond(
                429,
                envelope(
                    "rate_limit_error",
                    SPEND_CAP,
                    details={"error_code": "enforced_spend_limit_reached"},
                ),
            )
        ),
        K.QUOTA_EXHAUSTED,
        False,
        429,
        "ERR_LLM_SPEND_LIMIT",
    ),
    # OpenHands/OpenHands#9259 → RateLimitError with retry-after
    SdkCase(
        "RateLimitError-429",
        lambda: _sdk_error(
            respond(429, envelope("rate_limit_error", ORG_RATE_LIMIT), {"retry-after": "17"})
        ),
        K.RATE_LIMIT,
        True,
        429,
        "ERR_HTTP_429_RATE_LIMITED",
    ),
    # anthropics/claude-code#4684 → BadRequestError, but the condition is a credit balance
    SdkCase(
        "BadRequestError-credit-balance",
        lambda: _sdk_error(respond(400, envelope("invalid_request_error", CREDIT_BALANCE))),
        K.QUOTA_EXHAUSTED,
        False,
        400,
        "ERR_LLM_CREDIT_BALANCE",
    ),
    # sojohnnysaid/project-guide#2 → BadRequestError, context overflow
    SdkCase(
        "BadRequestError-prompt-too-long",
        lambda: _sdk_error(
            respond(
                400,
                envelope(
                    "invalid_request_error", "prompt is too long: 208656 tokens > 200000 maximum"
                ),
            )
        ),
        K.CONTEXT_LIMIT,
        False,
        400,
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # abi/screenshot-to-code#430 → AuthenticationError
    SdkCase(
        "AuthenticationError-401",
        lambda: _sdk_error(respond(401, envelope("authentication_error", "invalid x-api-key"))),
        K.AUTH,
        False,
        401,
    ),
    # anthropics/claude-code#6341: HTML 502 → InternalServerError with .type None
    SdkCase(
        "InternalServerError-html-502",
        lambda: _sdk_error(respond(502, CLOUDFLARE_502, ctype="text/html; charset=UTF-8")),
        K.SERVER_ERROR,
        True,
        502,
        "ERR_HTTP_502_BAD_GATEWAY",
    ),
    # anthropics/anthropic-sdk-python#1918: event: error in a 200 stream → APIStatusError(200)
    SdkCase(
        "APIStatusError-200-stream-overloaded",
        lambda: _sdk_error(
            respond(
                200,
                sse(("message_start", MESSAGE_START), ("error", STREAM_OVERLOADED)),
                ctype="text/event-stream",
            ),
            stream=True,
        ),
        K.SERVER_ERROR,
        True,
        200,
    ),
    # anthropics/claude-code#58367: content filter inside the stream → APIStatusError(200)
    SdkCase(
        "APIStatusError-200-stream-content-filter",
        lambda: _sdk_error(
            respond(
                200,
                sse(("message_start", MESSAGE_START), ("error", STREAM_CONTENT_FILTER)),
                ctype="text/event-stream",
            ),
            stream=True,
        ),
        K.CONTENT_POLICY,
        False,
        200,
        "ERR_LLM_CONTENT_FILTER",
    ),
    # anthropics/anthropic-sdk-python#88: APITimeoutError (a read timeout under the hood)
    SdkCase(
        "APITimeoutError-read-timeout",
        lambda: _sdk_error(raising(httpx2.ReadTimeout, "The read operation timed out")),
        K.TIMEOUT,
        True,
        None,
    ),
    # anthropics/claude-code#8802: "API Error (Connection error.)" → APIConnectionError
    SdkCase(
        "APIConnectionError-connect",
        lambda: _sdk_error(raising(httpx2.ConnectError, "[Errno 111] Connection refused")),
        K.NETWORK,
        True,
        None,
    ),
]


@pytest.mark.parametrize("case", SDK_CASES, ids=lambda c: c.id)
def test_sdk_exception_classifies_as_documented(case: SdkCase) -> None:
    assert_sdk_case(case, status=case.status, provider=PROVIDER, now=NOW)


def test_sdk_rate_limit_keeps_retry_after() -> None:
    # OpenHands/OpenHands#9259 with retry-after: the hint survives the SDK exception
    exc = _sdk_error(
        respond(429, envelope("rate_limit_error", ORG_RATE_LIMIT), {"retry-after": "17"})
    )
    assert backstay.classify(exc, now=NOW).retry_after_s == pytest.approx(17.0)
