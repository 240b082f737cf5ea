"""Aider (``aider --message …``): exits 0 on every error, so only its text tells.

It prints litellm's exception name (``litellm.RateLimitError: …``) followed by the provider
message, retries on its own, and prints ``Tokens: N sent, M received.`` after an answer.
The last litellm error counts only if no answer followed it. A quota 429 and a rate limit
print the same advice, so the provider message decides ("exceeded your current quota").
litellm reports a call that got no response at all (the OpenAI SDK's "Connection error.")
as an ``InternalServerError``: that is a network failure, not a server's 500.
"""

from __future__ import annotations

import datetime as _dt
import re

from backstay.classify.agents._common import coded, from_text
from backstay.failure import Failure

AGENT = "aider"

_LITELLM = re.compile(r"litellm\.([A-Z]\w*(?:Error|Exception)|Timeout)\b")
_ANSWERED = re.compile(r"^Tokens: .* sent", re.MULTILINE)
_TOKEN_LIMIT = re.compile(r"has hit a token limit", re.IGNORECASE)
# The SDK's own text for a call that got no HTTP response, after litellm's "…Exception - ".
_NO_RESPONSE = re.compile(r"Exception - Connection error\.?$")

# litellm exception class → HTTP status it stands for.
_STATUS = {
    "BadRequestError": 400,
    "AuthenticationError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
    "UnprocessableEntityError": 422,
    "RateLimitError": 429,
    "InternalServerError": 500,
    "APIError": 500,
    "ServiceUnavailableError": 503,
}
_CODES = {
    "ContextWindowExceededError": "ERR_LLM_CONTEXT_LENGTH",
    "ContentPolicyViolationError": "ERR_LLM_CONTENT_FILTER",
    "BudgetExceededError": "ERR_LIMIT_BUDGET",
    "Timeout": "ERR_TIMEOUT",
    "APIConnectionError": "ERR_NETWORK",
}


def check(text: str, exit_code: int | None, now: _dt.datetime) -> Failure | None:
    errors = list(_LITELLM.finditer(text))
    limit = list(_TOKEN_LIMIT.finditer(text))
    answers = [m.start() for m in _ANSWERED.finditer(text)]
    last_answer = answers[-1] if answers else -1
    if limit and limit[-1].start() > last_answer:
        start = text.rfind("\n", 0, limit[-1].start()) + 1
        line = text[start : start + 400].splitlines()[0]
        why = "aider's 'has hit a token limit'"
        return coded(
            "ERR_LLM_CONTEXT_LENGTH", line, agent=AGENT, family=None, exit_code=exit_code, why=why
        )
    if not errors or errors[-1].start() < last_answer:
        if exit_code in (0, None):
            return None
        message = text.strip()[-4000:]
        return from_text(message, agent=AGENT, family=None, now=now, exit_code=exit_code)
    match = errors[-1]
    line_start = text.rfind("\n", 0, match.start()) + 1
    message = text[line_start : line_start + 4000].split("\n\n", maxsplit=1)[0].strip()
    # Every litellm class on the line: "litellm.BadRequestError: litellm.ContentPolicy…".
    classes = [m.group(1) for m in _LITELLM.finditer(message.splitlines()[0])]
    for name in reversed(classes):
        if name in _CODES:
            why = f"litellm exception {name}"
            return coded(
                _CODES[name], message, agent=AGENT, family=None, exit_code=exit_code, why=why
            )
    if _NO_RESPONSE.search(message.splitlines()[0].rstrip()):
        why = "the SDK's 'Connection error.' (no response at all)"
        return coded("ERR_NETWORK", message, agent=AGENT, family=None, exit_code=exit_code, why=why)
    status = next((_STATUS[n] for n in reversed(classes) if n in _STATUS), None)
    return from_text(message, agent=AGENT, family=None, status=status, now=now, exit_code=exit_code)
