"""Claude Code (``claude -p --output-format json|stream-json``) output → ``Failure``.

Every case is an output Claude Code printed (or documents) for one failure; the comment
above it names where the text comes from. "probe" marks text observed by running Claude
Code 2.1.197 non-interactively against a local fake provider.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import pytest
from tests.classify.expect import AgentCase, assert_output_case

from backstay import FailureKind, check_output, classify_output

AGENT = "claude-code"
UTC = dt.UTC
NOW = dt.datetime(2026, 4, 23, 1, 0, tzinfo=UTC)


def _result(
    text: str | None,
    *,
    status: int | None = None,
    subtype: str = "success",
    is_error: bool = True,
    terminal_reason: str | None = "api_error",
    **extra: Any,
) -> dict[str, Any]:
    """A final ``result`` object as Claude Code 2.1 prints it."""
    obj: dict[str, Any] = {
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "duration_ms": 4047,
        "duration_api_ms": 3810,
        "num_turns": 1,
        "stop_reason": None if is_error else "end_turn",
        "session_id": "20dde46c-b21a-4475-ac07-6a190b80c4e3",
        "total_cost_usd": 0,
        "usage": {"input_tokens": 0, "output_tokens": 0},
        "permission_denials": [],
        "terminal_reason": terminal_reason,
        "api_error_status": status,
        "uuid": "e873a3d0-f8ab-4763-9a0b-f510282a0753",
    }
    if text is not None:
        obj["result"] = text
    obj.update(extra)
    return obj


def _json(text: str | None, **kwargs: Any) -> str:
    return json.dumps(_result(text, **kwargs))


def _init() -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "init",
        "cwd": "/work",
        "session_id": "20dde46c-b21a-4475-ac07-6a190b80c4e3",
        "model": "claude-sonnet-4-5",
        "permissionMode": "bypassPermissions",
        "tools": ["Bash", "Read", "Edit"],
    }


def _retry(attempt: int, status: int, error: str) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "api_retry",
        "attempt": attempt,
        "max_retries": 10,
        "retry_delay_ms": 500 * 2**attempt,
        "error_status": status,
        "error": error,
        "session_id": "20dde46c-b21a-4475-ac07-6a190b80c4e3",
    }


def _assistant(text: str) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        "session_id": "20dde46c-b21a-4475-ac07-6a190b80c4e3",
    }


def _stream(*events: dict[str, Any]) -> str:
    return "\n".join(json.dumps(e) for e in events) + "\n"


@dataclasses.dataclass(frozen=True)
class Case(AgentCase):
    now: dt.datetime = NOW


CASES = [
    # probe (429); text of the 429 body from anthropics/claude-code#2087
    Case(
        "json_429_request_rejected",
        _json(
            "API Error: Request rejected (429) · This request would exceed your account's "
            "rate limit. Please try again later.",
            status=429,
        ),
        "rate_limit",
        "ERR_HTTP_429_RATE_LIMITED",
    ),
    # laude-institute/harbor misses "Request rejected (429)" when the provider text lacks
    # "rate limit"; here api_error_status is null and only the text carries the status
    Case(
        "json_429_status_only_in_text",
        _json("API Error: Request rejected (429) · Please slow down.", status=None),
        "rate_limit",
        "ERR_HTTP_429_RATE_LIMITED",
    ),
    # probe (500)
    Case(
        "json_500_server_side_issue",
        _json(
            "API Error: 500 Internal server error. This is a server-side issue, usually "
            "temporary — try again in a moment.",
            status=500,
        ),
        "server_error",
        "ERR_HTTP_500_INTERNAL",
    ),
    # probe (529); anthropics/claude-code#3558
    Case(
        "json_529_overloaded",
        _json("API Error: 529 Overloaded", status=529),
        "server_error",
        "ERR_HTTP_529_OVERLOADED",
    ),
    # code.claude.com/docs/en/errors; anthropics/claude-code#5184
    Case(
        "json_repeated_529",
        _json("API Error: Repeated 529 Overloaded errors", status=529),
        "server_error",
        "ERR_HTTP_529_OVERLOADED",
    ),
    # same message in --output-format text (no JSON at all), xvirobotics/metabot#192
    Case(
        "text_repeated_529",
        "API Error: Repeated 529 Overloaded errors\n",
        "server_error",
        "ERR_HTTP_529_OVERLOADED",
    ),
    # probe (401); anthropics/claude-code#9694, #5666
    Case(
        "json_401_invalid_api_key",
        _json("Invalid API key · Fix external API key", status=401),
        "auth",
        "ERR_AUTH_INVALID_KEY",
    ),
    # probe (no key); nexu-io/open-design#1928 ("exit 1 · stdout: Not logged in")
    Case(
        "json_not_logged_in",
        _json("Not logged in · Please run /login", status=None),
        "auth",
        "ERR_AUTH_MISSING_CREDENTIALS",
    ),
    # anthropics/claude-code#79500 (403 oauth_org_not_allowed, subtype success + is_error)
    Case(
        "json_403_org_disabled",
        _json(
            "Your organization has disabled Claude subscription access for Claude Code · "
            "Use an Anthropic API key instead, or ask your admin to enable access",
            status=403,
        ),
        "auth",
        "ERR_HTTP_403_FORBIDDEN",
    ),
    # probe (context)
    Case(
        "json_prompt_too_long",
        _json(
            "Prompt is too long · the request is ~250000 tokens (limit 200000)",
            status=400,
            terminal_reason="prompt_too_long",
        ),
        "context_limit",
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # probe (credit); anthropics/claude-code#55469
    Case(
        "json_credit_balance_too_low",
        _json("Credit balance is too low", status=400),
        "quota_exhausted",
        "ERR_LLM_CREDIT_BALANCE",
    ),
    # probe (filter); anthropics/claude-code#28205, #13986
    Case(
        "json_content_filtering",
        _json("API Error: 400 Output blocked by content filtering policy", status=400),
        "content_policy",
        "ERR_LLM_CONTENT_FILTER",
    ),
    # anthropics/claude-code#61645 (Usage Policy refusal)
    Case(
        "json_usage_policy",
        _json(
            "API Error: Claude Code is unable to respond to this request, which appears to "
            "violate our Usage Policy (https://www.anthropic.com/legal/aup). Please double "
            "press esc to edit your last message or start a new session for Claude Code to "
            "assist with a different task.",
            status=None,
        ),
        "content_policy",
    ),
    # probe (hang + API_TIMEOUT_MS); anthropics/claude-code#2728
    Case("json_request_timed_out", _json("Request timed out", status=None), "timeout"),
    # code.claude.com/docs/en/errors; anthropics/claude-code#71188
    Case(
        "json_unable_to_connect",
        _json("API Error: Unable to connect to API (ConnectionRefused)", status=None),
        "network",
    ),
    # anthropics/claude-code#18766, severity1/claude-agent-sdk-go#106
    Case(
        "json_unable_to_connect_econnrefused",
        _json("API Error: Unable to connect to API (ECONNREFUSED)", status=None),
        "network",
        "ERR_CONNECTION_REFUSED",
    ),
    # anthropics/claude-code#4375 (title is the message Claude Code printed)
    Case(
        "json_usage_limit_epoch",
        _json("Claude AI usage limit reached|1753441200", status=429),
        "quota_exhausted",
        "ERR_LLM_USAGE_LIMIT",
        resets_at=dt.datetime(2025, 7, 25, 11, 0, tzinfo=UTC),
        now=dt.datetime(2025, 7, 25, 8, 0, tzinfo=UTC),
    ),
    # anthropics/claude-code#52575 (4:50am CEST on 2026-04-23 is 02:50 UTC)
    Case(
        "json_hit_your_limit_rome",
        _json("You've hit your limit · resets 4:50am (Europe/Rome)", status=429),
        "quota_exhausted",
        "ERR_LLM_USAGE_LIMIT",
        resets_at=dt.datetime(2026, 4, 23, 2, 50, tzinfo=UTC),
    ),
    # anthropics/claude-code#79136 (2.1.215: "session limit"; 10:30pm CEST is 20:30 UTC)
    Case(
        "json_hit_your_session_limit_berlin",
        _json(
            "You've hit your session limit · resets 10:30pm (Europe/Berlin)\n"
            "/login to switch to an API usage-billed account.",
            status=429,
        ),
        "quota_exhausted",
        "ERR_LLM_USAGE_LIMIT",
        resets_at=dt.datetime(2026, 7, 19, 20, 30, tzinfo=UTC),
        now=dt.datetime(2026, 7, 19, 15, 0, tzinfo=UTC),
    ),
    # anthropics/claude-code#21562 (reset on a later day; 11:30 IST is 06:00 UTC)
    Case(
        "json_hit_your_limit_dated_reset",
        _json("You've hit your limit · resets Jan 30, 11:30am (Asia/Calcutta)", status=429),
        "quota_exhausted",
        "ERR_LLM_USAGE_LIMIT",
        resets_at=dt.datetime(2026, 1, 30, 6, 0, tzinfo=UTC),
        now=dt.datetime(2026, 1, 28, 12, 0, tzinfo=UTC),
    ),
    # Digital-Process-Tools/claude-remember#98 (result printed with --max-turns 1)
    Case(
        "json_error_max_turns",
        json.dumps(
            {
                "type": "result",
                "subtype": "error_max_turns",
                "is_error": True,
                "num_turns": 2,
                "terminal_reason": "max_turns",
                "errors": ["Reached maximum number of turns (1)"],
            }
        ),
        "limit_exceeded",
        "ERR_LIMIT_MAX_TURNS",
    ),
    # ironflow-core tests/claude_api_errors.rs (docs.rs): 2.1.284 with --max-budget-usd
    Case(
        "json_error_max_budget",
        json.dumps(
            {
                "type": "result",
                "subtype": "error_max_budget_usd",
                "is_error": True,
                "num_turns": 7,
                "total_cost_usd": 0.51,
                "errors": ["Reached maximum budget ($0.5)"],
            }
        ),
        "limit_exceeded",
        "ERR_LIMIT_BUDGET",
    ),
    # probe (stream-json: one api_retry event per retry, then the final result)
    Case(
        "stream_429_after_retries",
        _stream(
            _init(),
            _retry(1, 429, "rate_limit"),
            _retry(2, 429, "rate_limit"),
            _result(
                "API Error: Request rejected (429) · rate limited by fake provider", status=429
            ),
        ),
        "rate_limit",
        "ERR_HTTP_429_RATE_LIMITED",
    ),
    # probe: the retries carry error_status even when the final result does not
    Case(
        "stream_status_from_api_retry",
        _stream(
            _init(),
            _retry(1, 500, "server_error"),
            _retry(2, 500, "server_error"),
            _result("API Error: Internal server error", status=None),
        ),
        "server_error",
        "ERR_HTTP_500_INTERNAL",
    ),
    # harbor-framework/harbor#3160: an earlier API error in the transcript must not win
    # over the final error_max_turns result
    Case(
        "stream_max_turns_after_earlier_api_error",
        _stream(
            _init(),
            _assistant("API Error: Request rejected (429) · rate limit"),
            _retry(1, 429, "rate_limit"),
            _assistant("Continuing with the refactor."),
            {
                "type": "result",
                "subtype": "error_max_turns",
                "is_error": True,
                "num_turns": 41,
                "terminal_reason": "max_turns",
                "errors": ["Reached maximum number of turns (40)"],
            },
        ),
        "limit_exceeded",
        "ERR_LIMIT_MAX_TURNS",
    ),
]

PARAMS = [pytest.param(c, id=c.id) for c in CASES]


@pytest.mark.parametrize("case", PARAMS)
def test_output_classifies_as_documented(case: Case) -> None:
    assert_output_case(case, agent=AGENT, now=case.now)


def test_success_subtype_with_is_error_is_a_failure() -> None:
    # anthropics/claude-code#79500: is_error wins over subtype, even at rc 0
    text = _json("API Error: Request rejected (429) · rate limited", status=429, subtype="success")
    found = check_output(text, agent=AGENT, exit_code=0, now=NOW)
    assert found is not None
    assert found.kind is FailureKind.RATE_LIMIT


def test_exit_code_is_recorded() -> None:
    text = _json("API Error: 529 Overloaded", status=529)
    assert classify_output(text, agent=AGENT, exit_code=1, now=NOW).details["exit_code"] == 1


# --- success: check_output returns None ------------------------------------------------

# anthropics/claude-code#38706 (a clean json result)
JSON_SUCCESS = _json("4", is_error=False, terminal_reason="completed", status=None)

SUCCESSES = [
    pytest.param(JSON_SUCCESS, 0, id="json_success_rc0"),
    pytest.param(JSON_SUCCESS, None, id="json_success_no_exit_code"),
    # probe: api_retry events during the run, then a successful result
    pytest.param(
        _stream(
            _init(),
            _retry(1, 529, "overloaded"),
            _assistant("Done: the tests pass."),
            _result("Done: the tests pass.", is_error=False, terminal_reason="completed"),
        ),
        0,
        id="stream_success_after_retries",
    ),
    # an answer that talks about rate limits is still an answer
    pytest.param(
        _json(
            "Added a rate limit handler: on 429 we wait for Retry-After.",
            is_error=False,
            terminal_reason="completed",
        ),
        0,
        id="json_success_mentioning_rate_limit",
    ),
]


@pytest.mark.parametrize(("text", "exit_code"), SUCCESSES)
def test_success_is_none(text: str, exit_code: int | None) -> None:
    assert check_output(text, agent=AGENT, exit_code=exit_code, now=NOW) is None


def test_no_failure_classifies_as_unknown_no_failure_found() -> None:
    found = classify_output(JSON_SUCCESS, agent=AGENT, exit_code=0, now=NOW)
    assert found.details["source"] == "no_failure_found"
