"""Anthropic: the codes and shapes of the Messages API.

Envelope ``{"type": "error", "error": {"type", "message", "details": {"error_code"}}}``;
``details.error_code`` (new, often absent) is the most specific evidence. Spend caps come as
429 ``rate_limit_error`` and credit/workspace limits as 400 ``invalid_request_error``, so the
type alone never decides. Claude subscription limits look like ordinary 429s except for
``anthropic-ratelimit-unified-status: rejected``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

# details.error_code values that decide on their own.
SPECIFIC: Final[Mapping[str, str]] = {
    "enforced_spend_limit_reached": "ERR_LLM_SPEND_LIMIT",
    "contract_spend_limit_reached": "ERR_LLM_SPEND_LIMIT",
    "linked_organization_spend_limit_reached": "ERR_LLM_SPEND_LIMIT",
    "workspace_spend_limit_reached": "ERR_LLM_SPEND_LIMIT",
    "ramp_limit_exceeded": "ERR_LLM_RAMP_LIMIT",
    "cmek_key_unreachable": "ERR_HTTP_503_UNAVAILABLE",
    "compaction_unavailable": "ERR_LLM_OVERLOADED",
    "prompt_too_long": "ERR_LLM_CONTEXT_LENGTH",
}

# error.type values: as strong as the HTTP status, weaker than codes and message patterns.
GENERIC: Final[Mapping[str, str]] = {
    "invalid_request_error": "ERR_HTTP_400_BAD_REQUEST",
    "authentication_error": "ERR_HTTP_401_UNAUTHORIZED",
    "billing_error": "ERR_HTTP_402_PAYMENT_REQUIRED",
    "permission_error": "ERR_HTTP_403_FORBIDDEN",
    "not_found_error": "ERR_HTTP_404_NOT_FOUND",
    "conflict_error": "ERR_HTTP_409_CONFLICT",
    "request_too_large": "ERR_HTTP_413_REQUEST_TOO_LARGE",
    "rate_limit_error": "ERR_HTTP_429_RATE_LIMITED",
    "api_error": "ERR_HTTP_500_INTERNAL",
    "timeout_error": "ERR_HTTP_504_GATEWAY_TIMEOUT",
    "overloaded_error": "ERR_HTTP_529_OVERLOADED",
}

# stop_reason values that are failures delivered with HTTP 200.
_STOP_REASONS: Final[Mapping[str, str]] = {
    "refusal": "ERR_LLM_REFUSAL",
    "model_context_window_exceeded": "ERR_LLM_CONTEXT_LENGTH",
}


def subscription_limited(headers: Mapping[str, str]) -> bool:
    """A Claude subscription (5-hour / weekly) window is used up."""
    return headers.get("anthropic-ratelimit-unified-status", "").lower() == "rejected"


def success_code(parsed: Any) -> str | None:
    """The failure hidden in a successful Messages response, if any."""
    if not isinstance(parsed, Mapping):
        return None
    message = parsed.get("delta") if parsed.get("type") == "message_delta" else parsed
    if not isinstance(message, Mapping):
        return None
    reason = message.get("stop_reason")
    return _STOP_REASONS.get(reason) if isinstance(reason, str) else None
