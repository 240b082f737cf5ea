"""Google Gemini (AI Studio and Vertex): google.rpc.Status bodies.

``{"error": {"code": <http>, "message", "status": "<CANONICAL>", "details": [...]}}`` with
``ErrorInfo.reason``, ``QuotaFailure.violations[].quotaId`` and ``RetryInfo.retryDelay``.
The message says "exceeded your current quota" for per-minute limits too, so only the
quota id tells a per-day quota (wait until midnight Pacific) from a per-minute one.
A bad API key is a 400 ``INVALID_ARGUMENT`` with reason ``API_KEY_INVALID``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from backstay.classify._http import as_list

SPECIFIC: Final[Mapping[str, str]] = {
    "api_key_invalid": "ERR_AUTH_INVALID_KEY",
    "api_key_expired": "ERR_AUTH_INVALID_KEY",
    "api_key_service_blocked": "ERR_HTTP_403_FORBIDDEN",
    "access_token_expired": "ERR_HTTP_401_UNAUTHORIZED",
    "consumer_suspended": "ERR_HTTP_403_FORBIDDEN",
    "service_disabled": "ERR_HTTP_403_FORBIDDEN",
    "billing_disabled": "ERR_LLM_QUOTA_EXHAUSTED",
    "user_location_not_supported": "ERR_AUTH_REGION_UNSUPPORTED",
}

GENERIC: Final[Mapping[str, str]] = {
    "invalid_argument": "ERR_HTTP_400_BAD_REQUEST",
    "failed_precondition": "ERR_HTTP_400_BAD_REQUEST",
    "out_of_range": "ERR_HTTP_400_BAD_REQUEST",
    "unauthenticated": "ERR_HTTP_401_UNAUTHORIZED",
    "permission_denied": "ERR_HTTP_403_FORBIDDEN",
    "not_found": "ERR_HTTP_404_NOT_FOUND",
    "already_exists": "ERR_HTTP_409_CONFLICT",
    "aborted": "ERR_HTTP_5XX",
    "resource_exhausted": "ERR_HTTP_429_RATE_LIMITED",
    "rate_limit_exceeded": "ERR_HTTP_429_RATE_LIMITED",
    "cancelled": "ERR_HTTP_499_CLIENT_CLOSED",
    "internal": "ERR_HTTP_500_INTERNAL",
    "unknown": "ERR_HTTP_500_INTERNAL",
    "data_loss": "ERR_HTTP_500_INTERNAL",
    "unimplemented": "ERR_HTTP_4XX",
    "unavailable": "ERR_HTTP_503_UNAVAILABLE",
    "deadline_exceeded": "ERR_HTTP_504_GATEWAY_TIMEOUT",
}

_PER_DAY = re.compile(r"(?i)per[_ ]?day|daily")
_PER_SHORT = re.compile(r"(?i)per[_ ]?(minute|second)")
_LIMIT_ZERO = re.compile(r"(?i)\blimit:\s*0\b(?!\.)")


def quota_code(quota_ids: Iterable[str], quota_values: Iterable[str], message: str) -> str | None:
    """Per-day quota, zero quota, or per-minute limit, from quota ids and the message."""
    ids = tuple(quota_ids)
    if any(v.strip() == "0" for v in quota_values) or _LIMIT_ZERO.search(message):
        return "ERR_LLM_QUOTA_ZERO"
    if any(_PER_DAY.search(q) for q in ids):
        return "ERR_LLM_DAILY_QUOTA"
    if any(_PER_SHORT.search(q) for q in ids):
        return "ERR_HTTP_429_RATE_LIMITED"
    return None


_BLOCKING_FINISH: Final = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)


def success_code(parsed: Any) -> str | None:
    """The failure hidden in a successful generateContent body, if any."""
    if not isinstance(parsed, Mapping):
        return None
    feedback = parsed.get("promptFeedback")
    if isinstance(feedback, Mapping) and feedback.get("blockReason"):
        return "ERR_LLM_CONTENT_FILTER"
    for candidate in as_list(parsed.get("candidates")):
        if not isinstance(candidate, Mapping):
            continue
        reason = candidate.get("finishReason")
        if reason in _BLOCKING_FINISH:
            return "ERR_LLM_CONTENT_FILTER"
        if reason == "MALFORMED_FUNCTION_CALL":
            return "ERR_OUTPUT_INVALID"
    return None
