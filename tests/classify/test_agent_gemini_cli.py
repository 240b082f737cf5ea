"""Gemini CLI (``gemini -p --output-format json|stream-json``) output → ``Failure``.

In json mode the error goes to stderr as ``{"error": {"type", "message", "code"}}`` and
the exit code is the HTTP status & 0xFF (429 → 173, 500 → 244, 503 → 247, 400 → 144);
the CLI's own fatal errors exit with small codes and put that exit code in ``code``.
Each case names its source in the comment above it; "probe" marks text observed by running
Gemini CLI 0.61.0 non-interactively against a local fake provider.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from tests.classify.expect import AgentCase as Case
from tests.classify.expect import assert_output_case

from backstay import check_output, classify_output

AGENT = "gemini-cli"
UTC = dt.UTC
NOW = dt.datetime(2026, 2, 1, 10, 5, 4, tzinfo=UTC)

# Printed to stderr on every run (probe); carries no evidence either way.
NOISE = (
    "Warning: 256-color support not detected. Using a terminal with at least 256-color "
    "support is recommended for a better visual experience.\n"
    "Ripgrep is not available. Falling back to GrepTool.\n"
)


def _stderr_json(message: str, code: int, error_type: str = "Error", *, noise: bool = True) -> str:
    """What json mode writes to stderr: the noise (when the terminal lacks 256 colours or
    ripgrep is missing), then one error object, indented as JsonFormatter prints it."""
    error = {"type": error_type, "message": message, "code": code}
    body = json.dumps({"session_id": "f7e662af", "error": error}, indent=2) + "\n"
    return (NOISE if noise else "") + body


def _google(code: int, status: str, message: str, details: list[Any] | None = None) -> str:
    """A raw google.rpc.Status body, as the CLI passes it on in ``message``."""
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return json.dumps({"error": error}, indent=2)


def _api_error(inner: str, code: int, status_text: str) -> str:
    """The ``[API Error: {...}]`` text: the SDK's wrapper around the raw body."""
    outer = {"error": {"message": inner, "code": code, "status": status_text}}
    return f"[API Error: {json.dumps(outer)}]"


def _stream_result(message: str) -> str:
    """stream-json: init, the user message, then a result with status error."""
    events = [
        {"type": "init", "timestamp": "2026-02-01T10:05:00.000Z", "session_id": "f7e662af"},
        {"type": "message", "role": "user", "content": "fix the failing test"},
        {
            "type": "result",
            "timestamp": "2026-02-01T10:05:04.684Z",
            "status": "error",
            "error": {"type": "unknown", "message": message},
            "stats": {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0},
        },
    ]
    return "\n".join(json.dumps(e) for e in events) + "\n"


_API_KEY_INVALID = _google(
    400,
    "INVALID_ARGUMENT",
    "API key not valid. Please pass a valid API key.",
    [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"},
        },
        {
            "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
            "locale": "en-US",
            "message": "API key not valid. Please pass a valid API key.",
        },
    ],
)

_PER_DAY_QUOTA = _google(
    429,
    "RESOURCE_EXHAUSTED",
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
    [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {
                    "quotaMetric": "generativelanguage.googleapis.com/"
                    "generate_content_free_tier_requests",
                    "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                    "quotaDimensions": {"location": "global", "model": "gemini-2.5-pro"},
                    "quotaValue": "100",
                }
            ],
        },
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "35s"},
    ],
)

# Google's per-day quotas reset at midnight Pacific: 2026-02-02 00:00 PST.
NEXT_PACIFIC_MIDNIGHT = dt.datetime(2026, 2, 2, 8, 0, tzinfo=UTC)


CASES = [
    # probe (429: rc 173, stderr JSON)
    Case(
        "json_429",
        _stderr_json("Resource has been exhausted (e.g. check quota).", 429),
        "rate_limit",
        "ERR_HTTP_429_RATE_LIMITED",
        exit_code=173,
    ),
    # probe: rc = 429 & 0xFF, nothing else on stderr but the usual noise
    Case("exit_173_without_json", NOISE, "rate_limit", "ERR_HTTP_429_RATE_LIMITED", exit_code=173),
    # probe (500: raw provider JSON in message)
    Case(
        "json_500",
        _stderr_json(_google(500, "INTERNAL", "Internal error encountered."), 500),
        "server_error",
        "ERR_HTTP_500_INTERNAL",
        exit_code=244,
    ),
    Case("exit_244_without_json", NOISE, "server_error", "ERR_HTTP_500_INTERNAL", exit_code=244),
    # probe (503); the provider text is from VectifyAI/OpenKB#164
    Case(
        "json_503",
        _stderr_json(
            "This model is currently experiencing high demand. Spikes in demand are usually "
            "temporary. Please try again later.",
            503,
        ),
        "server_error",
        "ERR_HTTP_503_UNAVAILABLE",
        exit_code=247,
    ),
    Case("exit_247_without_json", NOISE, "server_error", "ERR_HTTP_503_UNAVAILABLE", exit_code=247),
    # probe (400 API_KEY_INVALID); google-gemini/gemini-cli#25198
    Case(
        "json_400_api_key_invalid",
        _stderr_json(_API_KEY_INVALID, 400),
        "auth",
        "ERR_AUTH_INVALID_KEY",
        exit_code=144,
    ),
    # probe (400 token overflow)
    Case(
        "json_400_token_overflow",
        _stderr_json(
            _google(
                400,
                "INVALID_ARGUMENT",
                "The input token count (1238476) exceeds the maximum number of tokens "
                "allowed (1048576).",
            ),
            400,
        ),
        "context_limit",
        "ERR_LLM_CONTEXT_LENGTH",
        exit_code=144,
    ),
    Case(
        "exit_144_without_json", NOISE, "invalid_request", "ERR_HTTP_400_BAD_REQUEST", exit_code=144
    ),
    # probe (429 QuotaFailure PerDay); google-gemini/gemini-cli#18050, #15677
    Case(
        "json_daily_quota",
        _stderr_json("You have exhausted your daily quota on this model.", 429),
        "quota_exhausted",
        "ERR_LLM_DAILY_QUOTA",
        exit_code=173,
        resets_at=NEXT_PACIFIC_MIDNIGHT,
    ),
    # google-gemini/gemini-cli#5119 (per-day QuotaFailure inside "[API Error: …]")
    Case(
        "stream_api_error_per_day_quota",
        _stream_result(_api_error(_PER_DAY_QUOTA, 429, "Too Many Requests")),
        "quota_exhausted",
        "ERR_LLM_DAILY_QUOTA",
        exit_code=173,
        resets_at=NEXT_PACIFIC_MIDNIGHT,
    ),
    # google-gemini/gemini-cli#2020 (per-minute 429 inside "[API Error: …]")
    Case(
        "stream_api_error_429",
        _stream_result(
            _api_error(
                _google(
                    429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."
                ),
                429,
                "Too Many Requests",
            )
        ),
        "rate_limit",
        "ERR_HTTP_429_RATE_LIMITED",
        exit_code=173,
    ),
    # google-gemini/gemini-cli#4690 (stream-json, key rejected)
    Case(
        "stream_api_error_api_key_invalid",
        _stream_result(_api_error(_API_KEY_INVALID, 400, "Bad Request")),
        "auth",
        "ERR_AUTH_INVALID_KEY",
        exit_code=144,
    ),
    # probe (hang: "fetch failed sending request" after ~65 s)
    Case(
        "stream_fetch_failed",
        _stream_result(
            "[API Error: exception TypeError: fetch failed sending request for "
            "http://127.0.0.1:41877/v1beta/models/gemini-2.5-flash:streamGenerateContent"
            "?alt=sse]"
        ),
        "network",
        exit_code=1,
    ),
    # probe (no key: exit 41); google-gemini/gemini-cli validateNonInterActiveAuth.ts puts
    # the exit code 41 into the JSON "code"
    Case(
        "json_41_missing_api_key",
        _stderr_json(
            "When using Gemini API, you must specify the GEMINI_API_KEY environment "
            "variable.\nUpdate your environment and try again (no reload needed if using .env)!",
            41,
        ),
        "auth",
        "ERR_AUTH_MISSING_CREDENTIALS",
        exit_code=41,
    ),
    # probe (auth type not set up: exit 41, before any request)
    Case(
        "json_41_invalid_auth_method",
        _stderr_json("Invalid auth method selected.", 41),
        "invalid_request",
        "ERR_AGENT_CONFIG",
        exit_code=41,
    ),
    # the same on a terminal without the noise: stderr is the JSON alone, and its "code"
    # is the exit code 41, not an HTTP status
    Case(
        "json_41_invalid_auth_method_alone",
        _stderr_json("Invalid auth method selected.", 41, noise=False),
        "invalid_request",
        "ERR_AGENT_CONFIG",
        exit_code=41,
    ),
    # packages/cli/src/utils/errors.ts handleMaxTurnsExceededError (json mode, code 53)
    Case(
        "json_53_max_session_turns",
        _stderr_json(
            "Reached max session turns for this session. Increase the number of turns by "
            "specifying maxSessionTurns in settings.json.",
            53,
            "FatalTurnLimitedError",
            noise=False,
        ),
        "limit_exceeded",
        "ERR_LIMIT_MAX_TURNS",
        exit_code=53,
    ),
    # packages/cli/src/utils/errors.ts handleCancellationError (json mode, code 130)
    Case(
        "json_130_cancelled",
        _stderr_json("Operation cancelled.", 130, "FatalCancellationError", noise=False),
        "cancelled",
        "ERR_CANCELLED",
        exit_code=130,
    ),
]

# The CLI's own fatal exits in text mode (google-gemini/gemini-cli
# packages/core/src/utils/errors.ts: FatalError subclasses), each with a message the
# CLI's source raises with it.
FATAL_EXITS = [
    # FatalAuthenticationError (41): validateNonInterActiveAuth.ts, probe
    Case(
        "exit_41_auth",
        "Invalid auth method selected.\n",
        "invalid_request",
        "ERR_AGENT_CONFIG",
        exit_code=41,
    ),
    # FatalInputError (42): nonInteractiveCli.ts
    Case(
        "exit_42_input",
        "Exiting due to an error processing the @ command.\n",
        "invalid_request",
        "ERR_REQUEST_INVALID",
        exit_code=42,
    ),
    # FatalSandboxError (44): config/sandboxConfig.ts, a sandbox that cannot be set up
    Case(
        "exit_44_sandbox",
        "Missing sandbox command 'docker' (from GEMINI_SANDBOX)\n",
        "invalid_request",
        "ERR_AGENT_CONFIG",
        exit_code=44,
    ),
    # FatalConfigError (52): config/settings.ts
    Case(
        "exit_52_config",
        "Error in /root/.gemini/settings.json: Unexpected token } in JSON at position 212\n"
        "Please fix the configuration file(s) and try again.\n",
        "invalid_request",
        "ERR_AGENT_CONFIG",
        exit_code=52,
    ),
    # FatalTurnLimitedError (53): utils/errors.ts handleMaxTurnsExceededError
    Case(
        "exit_53_turn_limit",
        "Reached max session turns for this session. Increase the number of turns by "
        "specifying maxSessionTurns in settings.json.\n",
        "limit_exceeded",
        "ERR_LIMIT_MAX_TURNS",
        exit_code=53,
    ),
    # FatalCancellationError (130): utils/errors.ts handleCancellationError
    Case(
        "exit_130_cancelled", "Operation cancelled.\n", "cancelled", "ERR_CANCELLED", exit_code=130
    ),
]

PARAMS = [pytest.param(c, id=c.id) for c in CASES + FATAL_EXITS]


@pytest.mark.parametrize("case", PARAMS)
def test_output_classifies_as_documented(case: Case) -> None:
    assert_output_case(case, agent=AGENT, now=NOW)


def test_exit_code_is_recorded() -> None:
    found = classify_output(NOISE, agent=AGENT, exit_code=173, now=NOW)
    assert found.details["exit_code"] == 173


# --- success: check_output returns None ------------------------------------------------

JSON_SUCCESS = json.dumps(
    {
        "session_id": "f7e662af",
        "response": "The test now passes.",
        "stats": {"models": {"gemini-2.5-flash": {"api": {"totalRequests": 1}}}},
    }
)
STREAM_SUCCESS = "\n".join(
    json.dumps(e)
    for e in (
        {"type": "init", "timestamp": "2026-02-01T10:05:00.000Z", "session_id": "f7e662af"},
        {"type": "message", "role": "assistant", "content": "The test now passes."},
        {
            "type": "result",
            "timestamp": "2026-02-01T10:05:04.684Z",
            "status": "success",
            "stats": {"total_tokens": 812, "input_tokens": 790, "output_tokens": 22},
        },
    )
)

SUCCESSES = [
    # probe: json mode, stdout holds the response, stderr only noise
    pytest.param(JSON_SUCCESS, 0, id="json_success_rc0"),
    pytest.param(JSON_SUCCESS, None, id="json_success_no_exit_code"),
    pytest.param(STREAM_SUCCESS, 0, id="stream_success_rc0"),
    pytest.param(STREAM_SUCCESS, None, id="stream_success_no_exit_code"),
]


@pytest.mark.parametrize(("text", "exit_code"), SUCCESSES)
def test_success_is_none(text: str, exit_code: int | None) -> None:
    assert check_output(text, agent=AGENT, exit_code=exit_code, now=NOW) is None


# --- a reply the CLI cannot use: exit 0, an error event, a result with status error -----


def _unusable(reason: str) -> str:
    """stream-json as 0.61.0 prints it (probe: a 200 stream without a finish reason)."""
    events = [
        {"type": "init", "timestamp": "2026-02-01T10:05:00.000Z", "session_id": "f7e662af"},
        {"type": "message", "role": "user", "content": "fix the failing test"},
        {
            "type": "error",
            "timestamp": "2026-02-01T10:05:01.000Z",
            "severity": "error",
            "message": reason,
        },
        {
            "type": "result",
            "timestamp": "2026-02-01T10:05:01.000Z",
            "status": "error",
            "stats": {"total_tokens": 812, "input_tokens": 812, "output_tokens": 0},
        },
    ]
    return "\n".join(json.dumps(e) for e in events) + "\n"


UNUSABLE = [
    # probe: the provider blocked the prompt (promptFeedback.blockReason): the reason is lost
    ("Model stream ended without a finish reason.", "ERR_RESPONSE_MALFORMED"),
    # core/geminiChat.ts InvalidStreamError reasons
    (
        "Model stream ended due to safety settings (SAFETY) with empty response text.",
        "ERR_LLM_CONTENT_FILTER",
    ),
    (
        "Model stream ended due to token limit exhaustion (MAX_TOKENS) with empty response text.",
        "ERR_OUTPUT_TRUNCATED",
    ),
    ("Model stream ended with malformed function call.", "ERR_OUTPUT_INVALID"),
]


@pytest.mark.parametrize(("reason", "code"), UNUSABLE)
def test_a_run_ending_with_status_error_at_exit_0_is_a_failure(reason: str, code: str) -> None:
    found = check_output(_unusable(reason), agent=AGENT, exit_code=0, now=NOW)
    assert found is not None
    assert (found.code, found.message) == (code, reason)
