"""The general rules behind the failures the widened field corpus exposed, one class per table.

Each row is a shape of the class (a provider's or server's wording, a wrapper around it, a
CLI's way of hiding it) rather than a copy of a corpus case, so that the rule and not the
case is what passes.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from tests.classify.expect import (
    AgentCase,
    ResponseCase,
    WaitCase,
    assert_output_case,
    assert_response_case,
    assert_wait_case,
)

from backstay import FailureKind, check_output, classify_output, classify_response

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)
CTX = FailureKind.CONTEXT_LIMIT
POLICY = FailureKind.CONTENT_POLICY
QUOTA = FailureKind.QUOTA_EXHAUSTED
RATE = FailureKind.RATE_LIMIT
BAD = FailureKind.INVALID_REQUEST
AUTH = FailureKind.AUTH
OUTPUT = FailureKind.OUTPUT_INVALID


def _oai(
    message: str, code: str | None = None, kind: str = "invalid_request_error"
) -> dict[str, object]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


# --------------------------------------------------------------------------- context overflow

OVERFLOWS = [
    ResponseCase(
        "tgi-inputs-plus-max-new-tokens",
        422,
        {"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096"},
        CTX,
        False,
    ),
    ResponseCase(
        "served-sequence-length",
        400,
        _oai("prompt_tokens + max_tokens (9000) must be less than or equal to max_seq_len (8192)"),
        CTX,
        False,
    ),
    ResponseCase("max-prompt-tokens", 400, _oai("max_prompt_tokens exceeded: 70000"), CTX, False),
    ResponseCase(
        "input-tokens-exceed-configured-limit",
        400,
        _oai("Input tokens exceed the configured limit of 128000 tokens."),
        CTX,
        False,
    ),
    ResponseCase(
        "tokens-longer-than-context",
        400,
        _oai("The prompt (5000 tokens) is longer than the model's context length (4096 tokens)."),
        CTX,
        False,
    ),
    ResponseCase(
        "tokens-to-keep-greater-than-context",
        400,
        {"error": "The number of tokens to keep is greater than the context length (n_ctx: 4096)"},
        CTX,
        False,
    ),
    ResponseCase(
        "context-size-exceeded", 400, {"error": "Context size has been exceeded."}, CTX, False
    ),
    # an output-length parameter out of range is a bad request, not an overflow
    ResponseCase(
        "max-tokens-over-model-limit",
        400,
        {"message": "The maximum tokens you requested exceeds the model limit of 8192"},
        BAD,
        False,
    ),
    ResponseCase(
        "max-tokens-too-large",
        400,
        _oai("max_tokens is too large: 9000. This model supports at most 4096 completion tokens"),
        BAD,
        False,
    ),
    # "too many tokens" under a 429 is a throttle, never an overflow
    ResponseCase("too-many-tokens-429", 429, {"message": "Too many tokens, slow down"}, RATE, True),
]


@pytest.mark.parametrize("case", OVERFLOWS, ids=[c.id for c in OVERFLOWS])
def test_context_overflow_wordings(case: ResponseCase) -> None:
    assert_response_case(case, provider="openai-compatible", now=NOW)


# --------------------------------------------------------------------------- refusals

REFUSALS = [
    ResponseCase(
        "high-risk", 400, _oai("Rejected: the input was considered high risk"), POLICY, False
    ),
    ResponseCase(
        "data-inspection",
        400,
        {"message": "<400> InternalError.Algo.DataInspectionFailed: output may be unsafe"},
        POLICY,
        False,
    ),
    ResponseCase(
        "inappropriate-content",
        400,
        _oai("Input may contain inappropriate content."),
        POLICY,
        False,
    ),
    ResponseCase(
        "blocked-reason", 400, {"error": "blockReason: PROHIBITED_CONTENT"}, POLICY, False
    ),
    ResponseCase(
        "chinese-unsafe-content",
        400,
        {"error": {"code": "1301", "message": "输入内容可能包含不安全或敏感内容"}},
        POLICY,
        False,
    ),
    # a gateway's 429 or 500 around the refusal: the inner, specific error decides
    ResponseCase(
        "refusal-behind-a-gateway-429",
        429,
        {"error": {"message": "Provider returned error", "metadata": {"raw": "content_filter"}}},
        POLICY,
        False,
    ),
    ResponseCase(
        "refusal-behind-a-gateway-500",
        500,
        _oai("upstream: the request was considered high risk", kind="server_error"),
        POLICY,
        False,
    ),
]


@pytest.mark.parametrize("case", REFUSALS, ids=[c.id for c in REFUSALS])
def test_refusals_in_smaller_providers_words(case: ResponseCase) -> None:
    assert_response_case(case, provider="gateway", now=NOW)


# --------------------------------------------------------------------------- wrappers

WRAPPED = [
    # the wrapper's 500 around a 429 that is a billing stop
    ResponseCase(
        "500-around-a-429-balance",
        500,
        {"error": True, "message": 'Error code: 429 - {"error": {"message": "余额不足，请充值"}}'},
        QUOTA,
        False,
    ),
    # the wrapper's 400 around a throttle
    ResponseCase(
        "400-around-a-429-throttle",
        400,
        "Server responded with status 429. Error message: Rate limit is exceeded.",
        RATE,
        True,
    ),
    # a balance error sent as 403 or 401 is still a balance error
    ResponseCase(
        "403-paid-balance", 403, {"message": "Your paid balance is insufficient."}, QUOTA, False
    ),
    ResponseCase(
        "401-out-of-credits", 401, {"error": "You have run out of credits."}, QUOTA, False
    ),
]


@pytest.mark.parametrize("case", WRAPPED, ids=[c.id for c in WRAPPED])
def test_inner_error_outranks_the_wrappers_status(case: ResponseCase) -> None:
    assert_response_case(case, provider="gateway", now=NOW)


# --------------------------------------------------------------------------- bad tool calls

TOOL_CALLS = [
    ResponseCase(
        "tool-use-failed-code", 400, _oai("Failed.", code="tool_use_failed"), OUTPUT, True
    ),
    ResponseCase(
        "tool-call-validation-words",
        400,
        _oai("tool call validation failed: parameters did not match schema"),
        OUTPUT,
        True,
    ),
    ResponseCase(
        "tool-use-failed-in-a-stream",
        200,
        'event: error\ndata: {"error": {"message": "x", "code": "tool_use_failed"}}\n\n',
        OUTPUT,
        True,
    ),
]


@pytest.mark.parametrize("case", TOOL_CALLS, ids=[c.id for c in TOOL_CALLS])
def test_model_made_bad_tool_calls_are_output_invalid(case: ResponseCase) -> None:
    assert_response_case(case, provider="groq", now=NOW)


# --------------------------------------------------------------------------- waits

_RESETS_AT = int((NOW + dt.timedelta(hours=3)).timestamp())

WAITS = [
    # a structured reset outranks a reset in prose
    WaitCase(
        "resets-in-seconds-over-prose",
        {},
        {
            "error": {
                "type": "usage_limit_reached",
                "message": "Limit reached, resets in 10 days",
                "resets_in_seconds": 7200,
            }
        },
        7200.0,
    ),
    WaitCase(
        "resets-at-over-prose",
        {},
        {
            "error": {
                "type": "usage_limit_reached",
                "message": "resets in 2 days",
                "resets_at": _RESETS_AT,
            }
        },
        3 * 3600.0,
    ),
    WaitCase(
        "epoch-reset-header-over-prose",
        {"x-ratelimit-reset": str(_RESETS_AT * 1000)},
        {"error": {"message": "Rate limit exceeded: limit_rpd, try again in 1 day", "code": 429}},
        3 * 3600.0,
    ),
    # a wait in prose inside a wrapper's text
    WaitCase(
        "try-again-inside-a-wrapper",
        {},
        "Upstream error: 429 {'error': {'message': 'Rate limit exceeded. "
        "Try again in 7 seconds.'}}",
        7.0,
    ),
]


@pytest.mark.parametrize("case", WAITS, ids=[c.id for c in WAITS])
def test_structured_waits_outrank_prose(case: WaitCase) -> None:
    assert_wait_case(case, provider="openrouter", now=NOW)


def test_usage_limit_reached_is_a_quota_resetting_when_its_fields_say() -> None:
    body = {"error": {"type": "usage_limit_reached", "resets_at": _RESETS_AT}}
    failure = classify_response(429, {}, body, provider="openai", now=NOW)
    assert (failure.kind, failure.resets_at) == (QUOTA, NOW + dt.timedelta(hours=3))


# --------------------------------------------------------------------------- agent CLIs

UNANSWERED = [
    ("claude-code", ""),
    ("codex", "\n  \n"),
    ("gemini-cli", "Error when talking to Gemini API Full report available at: /tmp/r.json\n"),
    ("opencode", ""),
    ("aider", ""),
]


@pytest.mark.parametrize(("agent", "text"), UNANSWERED, ids=[a for a, _ in UNANSWERED])
def test_a_run_that_exits_0_without_an_answer_is_a_failure(agent: str, text: str) -> None:
    failure = check_output(text, agent=agent, exit_code=0, now=NOW)
    assert failure is not None
    assert (failure.kind, failure.retryable) == (FailureKind.UNKNOWN, True)


def _claude_result(result: str, **fields: object) -> str:
    return json.dumps(
        {"type": "result", "subtype": "success", "is_error": False, "result": result, **fields}
    )


def test_claude_success_with_an_empty_result_is_a_failure() -> None:
    assert check_output(_claude_result(""), agent="claude-code", exit_code=0, now=NOW) is not None


def test_claude_empty_result_with_the_answer_in_the_stream_is_a_success() -> None:
    answer = {"type": "assistant", "message": {"content": [{"type": "text", "text": "Hi."}]}}
    text = json.dumps(answer) + "\n" + _claude_result("")
    assert check_output(text, agent="claude-code", exit_code=0, now=NOW) is None


def test_claude_empty_result_with_structured_output_is_a_success() -> None:
    text = _claude_result("", structured_output={"ok": True})
    assert check_output(text, agent="claude-code", exit_code=0, now=NOW) is None


def test_claude_final_result_hiding_a_rejected_window_is_that_quota() -> None:
    window = {
        "type": "rate_limit_event",
        "rate_limit_info": {
            "status": "rejected",
            "resetsAt": _RESETS_AT,
            "rateLimitType": "five_hour",
        },
    }
    result = {"type": "result", "subtype": "success", "is_error": True, "result": ""}
    text = json.dumps(window) + "\n" + json.dumps(result)
    failure = classify_output(text, agent="claude-code", exit_code=1, now=NOW)
    assert (failure.kind, failure.resets_at) == (QUOTA, NOW + dt.timedelta(hours=3))


def test_codex_final_error_hiding_an_earlier_quota_is_that_quota() -> None:
    earlier = {
        "type": "error",
        "message": "You exceeded your current quota, please check your plan and billing details.",
    }
    final = {"type": "turn.failed", "error": {"message": "the turn did not complete"}}
    text = json.dumps(earlier) + "\n" + json.dumps(final)
    assert classify_output(text, agent="codex", exit_code=1, now=NOW).kind is QUOTA


CLI_AUTH = [
    (
        "codex",
        AgentCase(
            "refresh-token-reused",
            "Your refresh token was already used. Please sign in again.",
            "auth",
        ),
    ),
    (
        "codex",
        AgentCase(
            "access-token-not-refreshed", "Your access token could not be refreshed.", "auth"
        ),
    ),
    ("claude-code", AgentCase("oauth-token-expired", "OAuth token has expired.", "auth")),
    (
        "gemini-cli",
        AgentCase("set-an-auth-method", "Please set an Auth method in settings.json", "auth"),
    ),
]


@pytest.mark.parametrize(("agent", "case"), CLI_AUTH, ids=[c.id for _, c in CLI_AUTH])
def test_cli_sign_in_problems_are_auth(agent: str, case: AgentCase) -> None:
    assert_output_case(case, agent=agent, now=NOW)
