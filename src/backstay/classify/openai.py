"""OpenAI (and Azure OpenAI, and OpenAI-compatible servers): codes and shapes.

``{"error": {"message", "type", "param", "code"}}``; the openai SDK's ``e.body`` is the
inner dict. Quota and spend conditions arrive as 429s and may put the telling value in
``type`` or in ``code``, so both are read. ``rate_limit_exceeded`` is generic: a request
larger than the whole per-minute budget carries it too ("Request too large").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from backstay.classify._http import as_list

SPECIFIC: Final[Mapping[str, str]] = {
    "insufficient_quota": "ERR_LLM_QUOTA_EXHAUSTED",
    "credit_balance_exhausted": "ERR_LLM_CREDIT_BALANCE",
    "organization_spend_limit_exceeded": "ERR_LLM_SPEND_LIMIT",
    "project_spend_limit_exceeded": "ERR_LLM_SPEND_LIMIT",
    "organization_usage_limit_exceeded": "ERR_LLM_SPEND_LIMIT",
    "billing_hard_limit_reached": "ERR_LLM_SPEND_LIMIT",
    "billing_not_active": "ERR_LLM_QUOTA_EXHAUSTED",
    "budget_exceeded": "ERR_LLM_SPEND_LIMIT",  # LiteLLM proxy key / team budgets
    "context_length_exceeded": "ERR_LLM_CONTEXT_LENGTH",
    "exceed_context_size_error": "ERR_LLM_CONTEXT_LENGTH",  # llama.cpp server
    "string_above_max_length": "ERR_HTTP_400_BAD_REQUEST",
    "content_policy_violation": "ERR_LLM_CONTENT_FILTER",
    "content_filter": "ERR_LLM_CONTENT_FILTER",
    "responsibleaipolicyviolation": "ERR_LLM_CONTENT_FILTER",
    "invalid_prompt": "ERR_LLM_CONTENT_FILTER",
    "moderation_blocked": "ERR_LLM_CONTENT_FILTER",
    "invalid_api_key": "ERR_AUTH_INVALID_KEY",
    "account_deactivated": "ERR_HTTP_401_UNAUTHORIZED",
    "unsupported_country_region_territory": "ERR_AUTH_REGION_UNSUPPORTED",
    "model_not_found": "ERR_LLM_MODEL_NOT_FOUND",
    "slow_down": "ERR_LLM_RAMP_LIMIT",
    "server_is_overloaded": "ERR_LLM_OVERLOADED",
    "usage_limit_reached": "ERR_LLM_USAGE_LIMIT",  # ChatGPT-plan windows (Codex backend)
    "refresh_token_reused": "ERR_HTTP_401_UNAUTHORIZED",
    "tool_use_failed": "ERR_OUTPUT_INVALID",  # a malformed tool call by the model (Groq)
    "data_inspection_failed": "ERR_LLM_CONTENT_FILTER",  # DashScope moderation
}

GENERIC: Final[Mapping[str, str]] = {
    "rate_limit_exceeded": "ERR_HTTP_429_RATE_LIMITED",
    "requests": "ERR_HTTP_429_RATE_LIMITED",
    "tokens": "ERR_HTTP_429_RATE_LIMITED",
    "server_error": "ERR_HTTP_500_INTERNAL",
    "internal_error": "ERR_HTTP_500_INTERNAL",
    "invalid_request_error": "ERR_HTTP_400_BAD_REQUEST",
    "invalid_request": "ERR_HTTP_400_BAD_REQUEST",
}


def success_code(parsed: Any) -> str | None:
    """The failure hidden in a successful Chat Completions or Responses body, if any."""
    if not isinstance(parsed, Mapping):
        return None
    for choice in as_list(parsed.get("choices")):
        if not isinstance(choice, Mapping):
            continue
        if choice.get("finish_reason") == "content_filter":
            return "ERR_LLM_CONTENT_FILTER"
        message = choice.get("message") or choice.get("delta")
        if isinstance(message, Mapping) and message.get("refusal"):
            return "ERR_LLM_REFUSAL"
    response = parsed.get("response") if isinstance(parsed.get("response"), Mapping) else parsed
    if isinstance(response, Mapping) and response.get("status") == "incomplete":
        details = response.get("incomplete_details")
        if isinstance(details, Mapping) and details.get("reason") == "content_filter":
            return "ERR_LLM_CONTENT_FILTER"
    return None
