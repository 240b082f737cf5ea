"""opencode (``opencode run --format json``) output → ``Failure``.

Errors are JSONL events ``{"type": "error", "error": {"name", "data": {...}}}``; an
``APIError`` carries the provider's ``statusCode``, ``isRetryable``, ``responseHeaders``
and ``responseBody``. Error names and data fields are those of opencode's
packages/opencode/src/session/message-v2.ts. Each case names its source in the comment
above it; "probe" marks text observed by running opencode 1.18.33 non-interactively
against a local fake provider.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from tests.classify.expect import AgentCase as Case
from tests.classify.expect import assert_output_case

from backstay import check_output, classify_output

AGENT = "opencode"
NOW = dt.datetime(2026, 9, 8, 12, 0, tzinfo=dt.UTC)

SESSION = "ses_f7eaf57b4ffeRoCprFrTfUsZZJ"


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "timestamp": 1788875942731, "sessionID": SESSION, **fields}


def _step_start() -> dict[str, Any]:
    return _event("step_start", part={"type": "step-start"})


def _error(name: str, **data: Any) -> str:
    """A run that starts a step and then fails with one error event."""
    events = [_step_start(), _event("error", error={"name": name, "data": data})]
    return "\n".join(json.dumps(e) for e in events) + "\n"


def _openai_body(message: str, error_type: str, code: str | None) -> str:
    return json.dumps(
        {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    )


CASES = [
    # probe (429 with retry-after, honoured by opencode's own retries)
    Case(
        "api_error_429_retry_after",
        _error(
            "APIError",
            message="Rate limit reached for fake-model in organization org-XXXX on requests "
            "per min (RPM): Limit 3, Used 3, Requested 1.",
            statusCode=429,
            isRetryable=True,
            responseHeaders={"retry-after": "2", "content-type": "application/json"},
            responseBody=_openai_body(
                "Rate limit reached for fake-model in organization org-XXXX on requests per "
                "min (RPM): Limit 3, Used 3, Requested 1.",
                "requests",
                "rate_limit_exceeded",
            ),
        ),
        "rate_limit",
        "ERR_HTTP_429_RATE_LIMITED",
        retry_after_s=2.0,
    ),
    # probe (429 insufficient_quota: the body tells quota from rate limit)
    Case(
        "api_error_429_insufficient_quota",
        _error(
            "APIError",
            message="You exceeded your current quota, please check your plan and billing details.",
            statusCode=429,
            isRetryable=True,
            responseHeaders={"content-type": "application/json"},
            responseBody=_openai_body(
                "You exceeded your current quota, please check your plan and billing details.",
                "insufficient_quota",
                "insufficient_quota",
            ),
        ),
        "quota_exhausted",
        "ERR_LLM_QUOTA_EXHAUSTED",
    ),
    # probe (500 after opencode's 6 attempts)
    Case(
        "api_error_500",
        _error(
            "APIError",
            message="Internal Server Error",
            statusCode=500,
            isRetryable=True,
            responseHeaders={"content-type": "application/json"},
            responseBody=_openai_body(
                "The server had an error while processing your request. Sorry about that!",
                "server_error",
                None,
            ),
        ),
        "server_error",
        "ERR_HTTP_500_INTERNAL",
    ),
    # anomalyco/opencode#19203 (a 503 from an OpenAI-compatible provider)
    Case(
        "api_error_503",
        _error(
            "APIError",
            message="Service Unavailable",
            statusCode=503,
            isRetryable=True,
            responseBody="upstream connect error or disconnect/reset before headers",
        ),
        "server_error",
        "ERR_HTTP_503_UNAVAILABLE",
    ),
    # probe (401: isRetryable false)
    Case(
        "api_error_401_not_retryable",
        _error(
            "APIError",
            message="Incorrect API key provided: sk-fake***1234. You can find your API key "
            "at https://platform.openai.com/account/api-keys.",
            statusCode=401,
            isRetryable=False,
            responseHeaders={"content-type": "application/json"},
            responseBody=_openai_body(
                "Incorrect API key provided: sk-fake***1234. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                "invalid_api_key",
            ),
        ),
        "auth",
        "ERR_AUTH_INVALID_KEY",
    ),
    # message-v2.ts AuthError: no usable credentials for the provider
    Case(
        "provider_auth_error",
        _error(
            "ProviderAuthError",
            providerID="openai",
            message="OpenAI API key is missing. Pass it using the 'apiKey' parameter or the "
            "OPENAI_API_KEY environment variable.",
        ),
        "auth",
    ),
    # probe (context overflow); anomalyco/opencode#5360 for the text
    Case(
        "context_overflow_error",
        _error(
            "ContextOverflowError",
            message="prompt is too long: 202744 tokens > 200000 maximum",
            responseBody=json.dumps(
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "prompt is too long: 202744 tokens > 200000 maximum",
                    },
                }
            ),
        ),
        "context_limit",
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # OpenAI's invalid_prompt rejection (platform.openai.com error codes) in an APIError
    Case(
        "api_error_400_invalid_prompt",
        _error(
            "APIError",
            message="Invalid prompt: your prompt was flagged as potentially violating our "
            "usage policy. Please try again with a different prompt.",
            statusCode=400,
            isRetryable=False,
            responseBody=_openai_body(
                "Invalid prompt: your prompt was flagged as potentially violating our usage "
                "policy. Please try again with a different prompt.",
                "invalid_request_error",
                "invalid_prompt",
            ),
        ),
        "content_policy",
        "ERR_LLM_CONTENT_FILTER",
    ),
    # message-v2.ts AbortedError (the run was interrupted)
    Case(
        "message_aborted_error",
        _error("MessageAbortedError", message="The operation was aborted."),
        "cancelled",
        "ERR_CANCELLED",
    ),
    # message-v2.ts StructuredOutputError (schema output still invalid after its retries)
    Case(
        "structured_output_error",
        _error(
            "StructuredOutputError",
            message="Model output did not match the requested JSON schema",
            retries=2,
        ),
        "output_invalid",
        "ERR_OUTPUT_INVALID",
    ),
    # anomalyco/opencode#47972 (opencode's own server failed; nothing names a cause)
    Case(
        "unknown_error",
        _error(
            "UnknownError",
            message="Unexpected server error. Check server logs for details.",
            ref="err_4014dc86",
        ),
        "unknown",
    ),
    # laude-institute/harbor fails a run on any error event, even at rc 0
    Case(
        "error_event_with_exit_zero",
        _error(
            "APIError",
            message="Internal Server Error",
            statusCode=500,
            isRetryable=True,
        ),
        "server_error",
        "ERR_HTTP_500_INTERNAL",
        exit_code=0,
    ),
]

PARAMS = [pytest.param(c, id=c.id) for c in CASES]


@pytest.mark.parametrize("case", PARAMS)
def test_output_classifies_as_documented(case: Case) -> None:
    assert_output_case(case, agent=AGENT, now=NOW)


def test_status_code_recorded() -> None:
    case = next(c for c in CASES if c.id == "api_error_401_not_retryable")
    failure = classify_output(case.text, agent=AGENT, exit_code=case.exit_code, now=NOW)
    assert failure.status == 401


# --- success: check_output returns None ------------------------------------------------

SUCCESS = "\n".join(
    json.dumps(e)
    for e in (
        _step_start(),
        _event("text", part={"type": "text", "text": "Done: the test passes."}),
        _event(
            "step_finish",
            part={
                "type": "step-finish",
                "reason": "stop",
                "cost": 0,
                "tokens": {
                    "total": 10422,
                    "input": 10391,
                    "output": 31,
                    "reasoning": 0,
                    "cache": {"read": 0, "write": 0},
                },
            },
        ),
    )
)


@pytest.mark.parametrize("exit_code", [0, None])
def test_success_is_none(exit_code: int | None) -> None:
    # probe: step_start, text, step_finish with tokens
    assert check_output(SUCCESS, agent=AGENT, exit_code=exit_code, now=NOW) is None
