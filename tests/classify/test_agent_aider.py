"""Aider (``aider --message …``) output → ``Failure``.

Aider exits 0 on every error and prints litellm's exception, its own advice, and
"Retrying in N seconds..." to stdout; an answer ends with "Tokens: N sent, M received."
Each case names its source in the comment above it; "probe" marks text observed by
running Aider 0.86.2 non-interactively against a local fake provider. The advice lines
are Aider's own (aider/exceptions.py).
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from tests.classify.expect import AgentCase, assert_output_case

from backstay import check_output

AGENT = "aider"
NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)

HEADER = (
    "Aider v0.86.2\n"
    "Model: openai/fake-model with whole edit format\n"
    "Git repo: none\n"
    "Repo-map: disabled\n"
    "\n"
)

RATE_LIMIT_ADVICE = "The API provider has rate limited you. Try again later or check your quotas."
SERVER_ADVICE = "The API provider's servers are down or overloaded."
AUTH_ADVICE = "The API provider is not able to authenticate you. Check your API key."
POLICY_ADVICE = "The API provider has refused the request due to a safety policy about the content."
TIMEOUT_ADVICE = (
    "The API provider timed out without returning a response. They may be down or overloaded."
)


def _error(line: str, advice: str | None = None, *, retries: int = 0) -> str:
    """One litellm error as Aider prints it, repeated for each retry it makes."""
    block = line + "\n" + (advice + "\n" if advice else "")
    out = HEADER
    delay = 0.25
    for _ in range(retries):
        out += block + f"Retrying in {delay:.1f} seconds...\n"
        delay *= 2
    return out + block


@dataclasses.dataclass(frozen=True)
class Case(AgentCase):
    # Aider's exit code is always 0 (probe); it carries nothing.
    exit_code: int | None = 0


CASES = [
    # probe (429); OpenAI wording from smol-ai/developer#10
    Case(
        "rate_limit_error",
        _error(
            "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for "
            "fake-model in organization org-XXXX on tokens per min (TPM): Limit 30000, Used "
            "30000, Requested 1877. Please try again in 3.754s.",
            RATE_LIMIT_ADVICE,
            retries=3,
        ),
        "rate_limit",
        "ERR_HTTP_429_RATE_LIMITED",
    ),
    # probe (quota: same advice as a rate limit); BerriAI/litellm#5983
    Case(
        "rate_limit_error_insufficient_quota",
        _error(
            "litellm.RateLimitError: RateLimitError: OpenAIException - You exceeded your "
            "current quota, please check your plan and billing details. For more information "
            "on this error, read the docs: "
            "https://platform.openai.com/docs/guides/error-codes/api-errors.",
            RATE_LIMIT_ADVICE,
            retries=3,
        ),
        "quota_exhausted",
        "ERR_LLM_QUOTA_EXHAUSTED",
    ),
    # probe (500)
    Case(
        "internal_server_error",
        _error(
            "litellm.InternalServerError: InternalServerError: OpenAIException - "
            "Internal server error",
            SERVER_ADVICE,
            retries=3,
        ),
        "server_error",
        "ERR_HTTP_500_INTERNAL",
    ),
    # Aider-AI/aider#957 (Anthropic overload through litellm)
    Case(
        "internal_server_error_overloaded",
        _error(
            "litellm.InternalServerError: AnthropicException - Overloaded. Handle with "
            "`litellm.InternalServerError`.",
            SERVER_ADVICE,
            retries=2,
        ),
        "server_error",
    ),
    # VectifyAI/OpenKB#164 (a Gemini 503 through litellm)
    Case(
        "service_unavailable_error",
        _error(
            "litellm.ServiceUnavailableError: GeminiException - This model is currently "
            "experiencing high demand. Spikes in demand are usually temporary. Please try "
            "again later.",
            SERVER_ADVICE,
        ),
        "server_error",
        "ERR_HTTP_503_UNAVAILABLE",
    ),
    # probe (401); OpenAI wording from BerriAI/litellm#1356
    Case(
        "authentication_error_incorrect_key",
        _error(
            "litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API "
            "key provided: sk-fake***************1234. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            AUTH_ADVICE,
        ),
        "auth",
        "ERR_AUTH_INVALID_KEY",
    ),
    # Aider-AI/aider#3802
    Case(
        "authentication_error_no_credentials",
        _error(
            'litellm.AuthenticationError: AuthenticationError: OpenrouterException - {"error":'
            '{"message":"No auth credentials found","code":401}}',
            AUTH_ADVICE,
        ),
        "auth",
    ),
    # probe (context); Aider-AI/aider#2818
    Case(
        "token_limit",
        HEADER + "Model openai/fake-model has hit a token limit!\n"
        "Token counts below are approximate.\n\n"
        "Input tokens: ~60,895 of 128,000\n"
        "Output tokens: ~0 of 4,096\n"
        "Total tokens: ~60,895 of 128,000\n\n"
        "For more info: https://aider.chat/docs/troubleshooting/token-limits.html\n",
        "context_limit",
        "ERR_LLM_CONTEXT_LENGTH",
    ),
    # probe (policy)
    Case(
        "content_policy_violation",
        _error(
            "litellm.BadRequestError: litellm.ContentPolicyViolationError: "
            "ContentPolicyViolationError: OpenAIException - Your request was rejected as a "
            "result of our safety system.",
            POLICY_ADVICE,
            retries=2,
        ),
        "content_policy",
        "ERR_LLM_CONTENT_FILTER",
    ),
    # probe (--timeout)
    Case(
        "timeout",
        _error(
            "litellm.Timeout: APITimeoutError - Request timed out.",
            TIMEOUT_ADVICE,
            retries=2,
        ),
        "timeout",
        "ERR_TIMEOUT",
    ),
    # aider/exceptions.py (APIConnectionError, retried); litellm's connection error text
    Case(
        "api_connection_error",
        _error(
            "litellm.APIConnectionError: APIConnectionError: OpenAIException - Connection error.",
            retries=2,
        ),
        "network",
        "ERR_NETWORK",
    ),
    # probe (connection reset before any response): litellm calls it an InternalServerError
    Case(
        "internal_server_error_connection_error",
        _error(
            "litellm.InternalServerError: InternalServerError: OpenAIException - Connection error.",
            SERVER_ADVICE,
            retries=2,
        ),
        "network",
        "ERR_NETWORK",
    ),
    # aider/exceptions.py (NotFoundError, not retried); OpenAI's model_not_found text
    Case(
        "not_found_error_model",
        _error(
            "litellm.NotFoundError: OpenAIException - The model `fake-model-9` does not "
            "exist or you do not have access to it."
        ),
        "invalid_request",
        "ERR_LLM_MODEL_NOT_FOUND",
    ),
]

PARAMS = [pytest.param(c, id=c.id) for c in CASES]


@pytest.mark.parametrize("case", PARAMS)
def test_output_classifies_as_documented(case: Case) -> None:
    assert_output_case(case, agent=AGENT, now=NOW)  # classified and found at exit code 0
    assert check_output(case.text, agent=AGENT, exit_code=None, now=NOW) is not None


# --- success: check_output returns None ------------------------------------------------

ANSWER = (
    "Here is the updated file:\n\n"
    "hello.py\n```python\nprint('hello')\n```\n\n"
    "Applied edit to hello.py\n"
    "Tokens: 677 sent, 25 received. Cost: $0.0011 message, $0.0011 session.\n"
)

SUCCESSES = [
    # probe: a plain answer
    pytest.param(HEADER + ANSWER, id="answer"),
    # probe (fail only the first calls): an error, a retry, then the answer
    pytest.param(
        _error(
            "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached.",
            RATE_LIMIT_ADVICE,
            retries=1,
        )
        + "Retrying in 0.5 seconds...\n"
        + ANSWER,
        id="error_then_successful_retry",
    ),
    pytest.param(
        _error(
            "litellm.InternalServerError: InternalServerError: OpenAIException - "
            "Internal server error",
            SERVER_ADVICE,
        )
        + "Retrying in 0.2 seconds...\n"
        + ANSWER,
        id="server_error_then_successful_retry",
    ),
]


@pytest.mark.parametrize("text", SUCCESSES)
def test_success_is_none(text: str) -> None:
    assert check_output(text, agent=AGENT, exit_code=0, now=NOW) is None
