"""OpenAI and Azure OpenAI: real error responses, stream errors, hidden failures, SDK exceptions.

Every case is built from a public source cited in the comment above it. Bodies and messages are
quoted from the provider documentation or from the issue thread that reported them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

import httpx2
import openai
import pytest
from tests.classify.expect import (
    UNCHECKED,
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
PROVIDER = "openai"
FAKE_KEY = "sk-test-canary-0000000000"
MODEL = "gpt-4o"


def error_body(
    message: str, err_type: str | None, code: str | None, param: str | None = None, **extra: Any
) -> dict[str, Any]:
    """The documented OpenAI error shape: ``{"error": {message, type, param, code}}``."""
    error: dict[str, Any] = {"message": message, "type": err_type, "param": param, "code": code}
    error.update(extra)
    return {"error": error}


QUOTA_MESSAGE = "You exceeded your current quota, please check your plan and billing details."
CONTEXT_MESSAGE = (
    "This model's maximum context length is 8192 tokens. However, your messages resulted in "
    "8227 tokens. Please reduce the length of the messages."
)
REQUEST_TOO_LARGE = (
    "Request too large for gpt-4o in organization org-78asdf87asdf9aaa8976 on tokens per min "
    "(TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order "
    "to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more."
)
RPM_MESSAGE = (
    "Rate limit reached for gpt-4o-mini in organization org-OOhFjD3fpmItZTQAxWOQx11o on "
    "requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit "
    "https://platform.openai.com/account/rate-limits to learn more. You can increase your rate "
    "limit by adding a payment method to your account at "
    "https://platform.openai.com/account/billing."
)
TPM_MESSAGE_MS = (
    "Rate limit reached for gpt-4o in organization org-uOtiSEwvUnroadaOnJJquBEC on tokens per "
    "min (TPM): Limit 30000, Used 29937, Requested 385. Please try again in 644ms."
)
AZURE_FILTER_MESSAGE = (
    "The response was filtered due to the prompt triggering Azure OpenAI's content management "
    "policy. Please modify your prompt and retry. To learn more about our content filtering "
    "policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766"
)
INVALID_PROMPT = (
    "Invalid prompt: your prompt was flagged as potentially violating our usage policy. Please "
    "try again with a different prompt: "
    "https://platform.openai.com/docs/guides/reasoning#advice-on-prompting"
)
SERVER_ERROR_MESSAGE = (
    "The server had an error processing your request. Sorry about that! You can retry your "
    "request, or contact us through our help center at help.openai.com if you keep seeing this "
    "error. (Please include the request ID e5c949c8ec2c86be225544e5eefcbe4d in your email.)"
)
OVERLOADED_503 = (
    "That model is currently overloaded with other requests. You can retry your request, or "
    "contact us through our help center at help.openai.com if the error persists. (Please "
    "include the request ID 500d9fff2057e4af93a280f67002c342 in your message.)"
)
CLOUDFLARE_502 = """<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>cloudflare</center>
</body>
</html>"""
NGINX_413 = """<html>
<head><title>413 Request Entity Too Large</title></head>
<body>
<center><h1>413 Request Entity Too Large</h1></center>
<hr><center>nginx/1.26.1</center>
</body>
</html>"""

CASES: list[Case] = [
    # crewAIInc/crewAI-examples#121: 400 context_length_exceeded (E5)
    Case(
        "400-context-length-exceeded",
        400,
        error_body(CONTEXT_MESSAGE, "invalid_request_error", "context_length_exceeded", "messages"),
        K.CONTEXT_LIMIT,
        False,
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # vibrantlabsai/ragas#649: Azure 400 content_filter with innererror ResponsibleAIPolicyViolation
    Case(
        "400-azure-content-filter",
        400,
        error_body(
            AZURE_FILTER_MESSAGE,
            None,
            "content_filter",
            "prompt",
            status=400,
            innererror={
                "code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {
                    "hate": {"filtered": False, "severity": "safe"},
                    "self_harm": {"filtered": False, "severity": "safe"},
                    "sexual": {"filtered": False, "severity": "safe"},
                    "violence": {"filtered": True, "severity": "medium"},
                },
            },
        ),
        K.CONTENT_POLICY,
        False,
        "ERR_LLM_CONTENT_FILTER",
    ),
    # TheoKanning/openai-java#446: images 400 content_policy_violation (rejected by safety system)
    Case(
        "400-image-content-policy-violation",
        400,
        error_body(
            "Your request was rejected as a result of our safety system. Image descriptions "
            "generated from your prompt may contain text that is not allowed by our safety "
            "system. If you believe this was done in error, your request may succeed if "
            "retried, or by adjusting your prompt.",
            "invalid_request_error",
            "content_policy_violation",
        ),
        K.CONTENT_POLICY,
        False,
        "ERR_LLM_CONTENT_FILTER",
    ),
    # BeehiveInnovations/pal-mcp-server#178: reasoning models reject with 400 invalid_prompt
    Case(
        "400-invalid-prompt",
        400,
        error_body(INVALID_PROMPT, "invalid_request_error", "invalid_prompt"),
        K.CONTENT_POLICY,
        False,
        "ERR_LLM_CONTENT_FILTER",
        {
            "x-ratelimit-remaining-requests": "9999",
            "x-ratelimit-reset-requests": "6ms",
            "x-request-id": "req_bf2eadd66b9f5c652172871aebf34737",
        },
    ),
    # popjane/free_chatgpt_api#3: 401 invalid_api_key
    Case(
        "401-invalid-api-key",
        401,
        error_body(
            "Incorrect API key provided: sk-PMafP***************************************E873. "
            "You can find your API key at https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            "invalid_api_key",
        ),
        K.AUTH,
        False,
        "ERR_AUTH_INVALID_KEY",
    ),
    # home-assistant/core#120072: 403 unsupported_country_region_territory
    Case(
        "403-unsupported-region",
        403,
        error_body(
            "Country, region, or territory not supported",
            "request_forbidden",
            "unsupported_country_region_territory",
        ),
        K.AUTH,
        False,
        "ERR_AUTH_REGION_UNSUPPORTED",
    ),
    # shobrook/wut#14: 404 model_not_found
    Case(
        "404-model-not-found",
        404,
        error_body(
            "The model `gpt-4o` does not exist or you do not have access to it.",
            "invalid_request_error",
            "model_not_found",
        ),
        K.INVALID_REQUEST,
        False,
        "ERR_LLM_MODEL_NOT_FOUND",
    ),
    # openai-python README "Retries": 408 Request Timeout is retried by default
    Case("408-request-timeout", 408, "", K.TIMEOUT, True, "ERR_HTTP_408_REQUEST_TIMEOUT"),
    # openai-python README: 409 → ConflictError; without x-should-retry it is not retried by us
    Case("409-conflict", 409, "", K.INVALID_REQUEST, False, "ERR_HTTP_409_CONFLICT"),
    # open-webui/open-webui#3273: nginx HTML 413 in front of the OpenAI endpoint
    Case(
        "413-nginx-html",
        413,
        NGINX_413,
        K.INVALID_REQUEST,
        False,
        "ERR_HTTP_413_REQUEST_TOO_LARGE",
        {"content-type": "text/html"},
    ),
    # vibrantlabsai/ragas#861: openai.UnprocessableEntityError 422 with a pydantic "detail" body
    Case(
        "422-unprocessable-detail",
        422,
        {
            "detail": [
                {
                    "type": "string_type",
                    "loc": ["body", "input", "str"],
                    "msg": "Input should be a valid string",
                    "input": [[791, 1561, 9635]],
                }
            ]
        },
        K.INVALID_REQUEST,
        False,
        "ERR_HTTP_422_UNPROCESSABLE",
    ),
    # feder-cr/invisible_playwright_mcp#249: 429 rate_limit_exceeded (RPM) "try again in 20s"
    Case(
        "429-rpm-rate-limit",
        429,
        error_body(RPM_MESSAGE, "requests", "rate_limit_exceeded"),
        K.RATE_LIMIT,
        True,
        "ERR_HTTP_429_RATE_LIMITED",
    ),
    # pipedream.com/community/t/error-request-failed-with-status-code-429/6896: older
    # insufficient_quota body has code null and the value in type (E3)
    Case(
        "429-insufficient-quota-code-null",
        429,
        error_body(QUOTA_MESSAGE, "insufficient_quota", None),
        K.QUOTA_EXHAUSTED,
        False,
        "ERR_LLM_QUOTA_EXHAUSTED",
    ),
    # openai/openai-python RateLimitError.code == 'insufficient_quota' (newer bodies set both)
    Case(
        "429-insufficient-quota",
        429,
        error_body(QUOTA_MESSAGE, "insufficient_quota", "insufficient_quota"),
        K.QUOTA_EXHAUSTED,
        False,
        "ERR_LLM_QUOTA_EXHAUSTED",
    ),
    # developers.openai.com/api/docs/guides/spend-limits: hard project limit → 429
    # project_spend_limit_exceeded, type may still be insufficient_quota (check both fields)
    Case(
        "429-project-spend-limit",
        429,
        error_body(QUOTA_MESSAGE, "insufficient_quota", "project_spend_limit_exceeded"),
        K.QUOTA_EXHAUSTED,
        False,
        "ERR_LLM_SPEND_LIMIT",
    ),
    # TheR1D/shell_gpt#653: 429 "Request too large" never fits the per-minute budget (E4)
    Case(
        "429-request-too-large",
        429,
        error_body(REQUEST_TOO_LARGE, "tokens", "rate_limit_exceeded"),
        K.INVALID_REQUEST,
        False,
        "ERR_LLM_REQUEST_TOO_LARGE",
    ),
    # same rate-limit body with x-should-retry: false (openai-python _should_retry obeys it)
    Case(
        "429-should-retry-false",
        429,
        error_body(RPM_MESSAGE, "requests", "rate_limit_exceeded"),
        K.RATE_LIMIT,
        False,
        "ERR_RATE_LIMIT_NO_RETRY",
        {"x-should-retry": "false"},
    ),
    # ai-genie/chatgpt-vscode#100: 500 server_error
    Case(
        "500-server-error",
        500,
        error_body(SERVER_ERROR_MESSAGE, "server_error", None),
        K.SERVER_ERROR,
        True,
        "ERR_HTTP_500_INTERNAL",
    ),
    # n3d1117/chatgpt-telegram-bot#637: openai.InternalServerError with a Cloudflare HTML 502
    Case(
        "502-cloudflare-html",
        502,
        CLOUDFLARE_502,
        K.SERVER_ERROR,
        True,
        "ERR_HTTP_502_BAD_GATEWAY",
        {"content-type": "text/html", "server": "cloudflare"},
    ),
    # stanfordnlp/dspy#203: JSON 502 {"error":{"code":502,"message":"Bad gateway.",
    # "type":"cf_bad_gateway"}}
    Case(
        "502-cf-bad-gateway-json",
        502,
        {
            "error": {
                "code": 502,
                "message": "Bad gateway.",
                "param": None,
                "type": "cf_bad_gateway",
            }
        },
        K.SERVER_ERROR,
        True,
        "ERR_HTTP_502_BAD_GATEWAY",
        {"server": "cloudflare"},
    ),
    # ikechan8370/chatgpt-plugin#125: 503 "That model is currently overloaded"
    Case(
        "503-model-overloaded",
        503,
        error_body(OVERLOADED_503, "server_error", None),
        K.SERVER_ERROR,
        True,
        "ERR_HTTP_503_UNAVAILABLE",
    ),
    # openai-python README: every status >= 500 → InternalServerError; a 504 is a timeout
    Case("504-gateway-timeout", 504, "", K.TIMEOUT, True, "ERR_HTTP_504_GATEWAY_TIMEOUT"),
    # onlyoffice AiOpenAIStreamError doc + LlmKira/Openaibot#125: chat stream `data: {"error":…}`
    Case(
        "200-chat-stream-data-error",
        200,
        "data: "
        + json.dumps(
            error_body(
                "The server had an error while processing your request. Sorry about that!",
                "server_error",
                None,
            )
        )
        + "\n\n",
        K.SERVER_ERROR,
        True,
        "ERR_LLM_STREAM_ERROR",
        {"content-type": "text/event-stream"},
    ),
    # dyad-sh/dyad#1672: Responses stream error event, context_length_exceeded after a 200
    Case(
        "200-responses-stream-context",
        200,
        {
            "type": "error",
            "sequence_number": 2,
            "error": {
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
                "message": "Your input exceeds the context window of this model. Please adjust "
                "your input and try again.",
                "param": "input",
            },
        },
        K.CONTEXT_LIMIT,
        False,
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # Wei-Shaw/sub2api#6631: Responses stream error server_is_overloaded
    Case(
        "200-responses-stream-overloaded",
        200,
        {
            "error": {
                "code": "server_is_overloaded",
                "message": "Our servers are currently overloaded. Please try again later.",
                "param": None,
                "type": "service_unavailable_error",
            },
            "sequence_number": 2,
            "type": "error",
        },
        K.SERVER_ERROR,
        True,
        "ERR_LLM_OVERLOADED",
    ),
    # Wei-Shaw/sub2api#6631: the terminal response.failed event with response.error
    Case(
        "200-responses-failed-event",
        200,
        {
            "response": {
                "id": "resp_07b225dc6e39fefb016a9bb3b6f5c087d08be915c9631f77a2",
                "object": "response",
                "status": "failed",
                "error": {
                    "code": "server_error",
                    "message": "Our servers are currently overloaded. Please try again later.",
                },
            },
            "sequence_number": 4,
            "type": "response.failed",
        },
        K.SERVER_ERROR,
        True,
    ),
    # OpenAI API reference ResponseErrorEvent (type/code/message/param/sequence_number at top
    # level; mirrored by docs.rs openai-client-base) with the TPM text of BuilderIO/micro-agent#86
    Case(
        "200-responses-top-level-rate-limit",
        200,
        {
            "type": "error",
            "code": "rate_limit_exceeded",
            "message": TPM_MESSAGE_MS,
            "param": None,
            "sequence_number": 1,
        },
        K.RATE_LIMIT,
        True,
        "ERR_LLM_RATE_LIMITED",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_response_classifies_as_documented(case: Case) -> None:
    assert_response_case(case, provider=PROVIDER, now=NOW)


# ---------------------------------------------------------------------------------------------
# Wait hints


WAIT_CASES: list[WaitCase] = [
    # feder-cr/invisible_playwright_mcp#249: no retry-after header, the message says 20s
    WaitCase(
        "message-try-again-in-20s",
        {},
        error_body(RPM_MESSAGE, "requests", "rate_limit_exceeded"),
        20.0,
        status=429,
    ),
    # BuilderIO/micro-agent#86: "Please try again in 644ms."
    WaitCase(
        "message-try-again-in-644ms",
        {},
        error_body(TPM_MESSAGE_MS, "tokens", "rate_limit_exceeded"),
        0.644,
        status=429,
    ),
    # platform.openai.com/docs/guides/rate-limits header example: x-ratelimit-reset-tokens "6m0s";
    # on a 429 without retry-after the exhausted dimension's reset is the wait
    WaitCase(
        "x-ratelimit-reset-6m0s",
        {
            "x-ratelimit-limit-requests": "60",
            "x-ratelimit-limit-tokens": "150000",
            "x-ratelimit-remaining-requests": "59",
            "x-ratelimit-remaining-tokens": "0",
            "x-ratelimit-reset-requests": "1s",
            "x-ratelimit-reset-tokens": "6m0s",
        },
        error_body("Rate limit reached for requests", "tokens", "rate_limit_exceeded"),
        360.0,
        status=429,
    ),
    # openai-python _parse_retry_after_header: retry-after-ms first, then retry-after
    WaitCase(
        "retry-after-ms",
        {"retry-after-ms": "1500", "retry-after": "9"},
        error_body(RPM_MESSAGE, "requests", "rate_limit_exceeded"),
        1.5,
        status=429,
    ),
    # same parser: retry-after in seconds wins over the "try again in 20s" text
    WaitCase(
        "retry-after-beats-message",
        {"retry-after": "21"},
        error_body(RPM_MESSAGE, "requests", "rate_limit_exceeded"),
        21.0,
        status=429,
    ),
    # same parser: retry-after as an HTTP-date (RFC 9110 §10.2.3)
    WaitCase(
        "retry-after-http-date",
        {"retry-after": "Sat, 01 Aug 2026 12:00:45 GMT"},
        error_body(OVERLOADED_503, "server_error", None),
        45.0,
        status=503,
    ),
]


@pytest.mark.parametrize("case", WAIT_CASES, ids=lambda c: c.id)
def test_retry_after_hint(case: WaitCase) -> None:
    assert_wait_case(case, provider=PROVIDER, now=NOW)


# ---------------------------------------------------------------------------------------------
# Successful bodies that hide a failure


def chat_completion(choice: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1709204276,
        "model": "gpt-35-turbo",
        "choices": [dict(choice)],
        "usage": {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29},
    }


@pytest.mark.parametrize(
    ("body", "kind", "code"),
    [
        # microsoft/semantic-kernel#5240: Azure sets finish_reason content_filter with HTTP 200
        pytest.param(
            chat_completion(
                {
                    "finish_reason": "content_filter",
                    "index": 0,
                    "message": {"role": "assistant", "content": None},
                }
            ),
            K.CONTENT_POLICY,
            "ERR_LLM_CONTENT_FILTER",
            id="finish-reason-content-filter",
        ),
        # platform.openai.com/docs/guides/structured-outputs: refusal in the assistant message
        pytest.param(
            chat_completion(
                {
                    "finish_reason": "stop",
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": "I'm sorry, I cannot assist with that request.",
                    },
                }
            ),
            K.CONTENT_POLICY,
            "ERR_LLM_REFUSAL",
            id="message-refusal",
        ),
        # streaming twin of the Azure case: a chunk whose delta ends with content_filter
        pytest.param(
            {
                "id": "chatcmpl-abc123",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "content_filter"}],
            },
            K.CONTENT_POLICY,
            "ERR_LLM_CONTENT_FILTER",
            id="chunk-finish-reason-content-filter",
        ),
    ],
)
def test_hidden_failure_in_success_body(body: object, kind: FailureKind, code: str) -> None:
    failure = backstay.check_response(200, {}, body, provider=PROVIDER, now=NOW)
    assert failure is not None
    assert (failure.kind, failure.code) == (kind, code)


def test_clean_success_is_none() -> None:
    # platform.openai.com/docs/api-reference/chat/object: finish_reason "stop"
    body = chat_completion(
        {
            "finish_reason": "stop",
            "index": 0,
            "message": {"role": "assistant", "content": "Hello there, how may I assist you?"},
        }
    )
    assert backstay.check_response(200, {}, body, provider=PROVIDER) is None


# ---------------------------------------------------------------------------------------------
# Exceptions raised by the real openai SDK, driven through a mock transport


def _sdk_error(handler: Handler, *, api: str = "chat", stream: bool = False) -> BaseException:
    with (
        httpx2.Client(transport=httpx2.MockTransport(handler)) as http,
        openai.OpenAI(api_key=FAKE_KEY, max_retries=0, http_client=http) as client,
    ):
        try:
            if api == "responses":
                for _event in client.responses.create(model=MODEL, input="hi", stream=True):
                    pass
            elif stream:
                for _chunk in client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
                ):
                    pass
            else:
                client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": "hi"}]
                )
        except openai.OpenAIError as exc:
            return exc
    raise AssertionError("the SDK raised nothing")


def _sse(data: object) -> str:
    return f"data: {json.dumps(data)}\n\n"


SDK_CASES: list[SdkCase] = [
    # pipedream community thread → RateLimitError, but insufficient_quota
    SdkCase(
        "RateLimitError-insufficient-quota",
        lambda: _sdk_error(
            respond(429, error_body(QUOTA_MESSAGE, "insufficient_quota", "insufficient_quota"))
        ),
        K.QUOTA_EXHAUSTED,
        False,
        429,
        "ERR_LLM_QUOTA_EXHAUSTED",
    ),
    # Aider-AI/aider#1880 → RateLimitError, but "Request too large"
    SdkCase(
        "RateLimitError-request-too-large",
        lambda: _sdk_error(
            respond(429, error_body(REQUEST_TOO_LARGE, "tokens", "rate_limit_exceeded"))
        ),
        K.INVALID_REQUEST,
        False,
        429,
        "ERR_LLM_REQUEST_TOO_LARGE",
    ),
    # feder-cr/invisible_playwright_mcp#249 → RateLimitError, a real per-minute limit
    SdkCase(
        "RateLimitError-rpm",
        lambda: _sdk_error(
            respond(429, error_body(RPM_MESSAGE, "requests", "rate_limit_exceeded"))
        ),
        K.RATE_LIMIT,
        True,
        429,
        "ERR_HTTP_429_RATE_LIMITED",
    ),
    # rahul2002m/ChatPDF#6 → BadRequestError context_length_exceeded
    SdkCase(
        "BadRequestError-context-length",
        lambda: _sdk_error(
            respond(
                400,
                error_body(
                    CONTEXT_MESSAGE, "invalid_request_error", "context_length_exceeded", "messages"
                ),
            )
        ),
        K.CONTEXT_LIMIT,
        False,
        400,
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # alan-turing-institute/t0-1#69 → BadRequestError invalid_prompt
    SdkCase(
        "BadRequestError-invalid-prompt",
        lambda: _sdk_error(
            respond(400, error_body(INVALID_PROMPT, "invalid_request_error", "invalid_prompt"))
        ),
        K.CONTENT_POLICY,
        False,
        400,
        "ERR_LLM_CONTENT_FILTER",
    ),
    # dan1471/FREE-openai-api-keys#48 → AuthenticationError invalid_api_key
    SdkCase(
        "AuthenticationError-401",
        lambda: _sdk_error(
            respond(
                401,
                error_body(
                    "Incorrect API key provided: sk-uvwx5*******************************5678. "
                    "You can find your API key at https://platform.openai.com/account/api-keys.",
                    "invalid_request_error",
                    "invalid_api_key",
                ),
            )
        ),
        K.AUTH,
        False,
        401,
        "ERR_AUTH_INVALID_KEY",
    ),
    # nalgeon/pokitoki#42 → PermissionDeniedError unsupported region
    SdkCase(
        "PermissionDeniedError-region",
        lambda: _sdk_error(
            respond(
                403,
                error_body(
                    "Country, region, or territory not supported",
                    "request_forbidden",
                    "unsupported_country_region_territory",
                ),
            )
        ),
        K.AUTH,
        False,
        403,
        "ERR_AUTH_REGION_UNSUPPORTED",
    ),
    # shobrook/wut#14 → NotFoundError model_not_found
    SdkCase(
        "NotFoundError-model",
        lambda: _sdk_error(
            respond(
                404,
                error_body(
                    "The model `gpt-4o` does not exist or you do not have access to it.",
                    "invalid_request_error",
                    "model_not_found",
                ),
            )
        ),
        K.INVALID_REQUEST,
        False,
        404,
        "ERR_LLM_MODEL_NOT_FOUND",
    ),
    # n3d1117/chatgpt-telegram-bot#637 → InternalServerError with HTML 502
    SdkCase(
        "InternalServerError-html-502",
        lambda: _sdk_error(respond(502, CLOUDFLARE_502, ctype="text/html")),
        K.SERVER_ERROR,
        True,
        502,
        "ERR_HTTP_502_BAD_GATEWAY",
    ),
    # Oaklight/argo-proxy#91: content_filter error chunk in a chat stream → plain APIError
    SdkCase(
        "APIError-chat-stream-content-filter",
        lambda: _sdk_error(
            respond(
                200,
                _sse(error_body(AZURE_FILTER_MESSAGE, None, "content_filter", "prompt")),
                ctype="text/event-stream",
            ),
            stream=True,
        ),
        K.CONTENT_POLICY,
        False,
        None,
        "ERR_LLM_CONTENT_FILTER",
    ),
    # LlmKira/Openaibot#125 text in a chat stream `data: {"error":…}` → plain APIError
    SdkCase(
        "APIError-chat-stream-server-error",
        lambda: _sdk_error(
            respond(
                200,
                _sse(
                    error_body(
                        "The server had an error while processing your request. Sorry about that!",
                        "server_error",
                        None,
                    )
                ),
                ctype="text/event-stream",
            ),
            stream=True,
        ),
        K.SERVER_ERROR,
        True,
        None,
    ),
    # dyad-sh/dyad#1672: Responses stream error event → plain APIError, context overflow
    SdkCase(
        "APIError-responses-stream-context",
        lambda: _sdk_error(
            respond(
                200,
                _sse(
                    {
                        "type": "error",
                        "sequence_number": 2,
                        "error": {
                            "type": "invalid_request_error",
                            "code": "context_length_exceeded",
                            "message": "Your input exceeds the context window of this model. "
                            "Please adjust your input and try again.",
                            "param": "input",
                        },
                    }
                ),
                ctype="text/event-stream",
            ),
            api="responses",
        ),
        K.CONTEXT_LIMIT,
        False,
        None,
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # langchain-ai/langchain#21919: openai.APITimeoutError "Request timed out."
    SdkCase(
        "APITimeoutError-read-timeout",
        lambda: _sdk_error(raising(httpx2.ReadTimeout, "The read operation timed out")),
        K.TIMEOUT,
        True,
        None,
    ),
    # prcore/assistant#1 "Connection error." → APIConnectionError
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
    # status None: the SDK's exception carries no status (a plain APIError from a stream, a
    # transport error), so only the provider is expected of it
    assert_sdk_case(case, status=case.status or UNCHECKED, provider=PROVIDER, now=NOW)


def test_sdk_rate_limit_keeps_retry_after_ms() -> None:
    # openai-python _parse_retry_after_header reads retry-after-ms; the hint survives the exception
    exc = _sdk_error(
        respond(
            429,
            error_body(RPM_MESSAGE, "requests", "rate_limit_exceeded"),
            {"retry-after-ms": "1500"},
        )
    )
    assert backstay.classify(exc, now=NOW).retry_after_s == pytest.approx(1.5)
