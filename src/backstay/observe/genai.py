"""What an adapter is in the vocabulary of the observability tools: the framework name,
the GenAI provider (``gen_ai.provider.name``), the operation of an attempt and the kind
of step it is.

API adapters make one model call per attempt (``chat``); agent CLIs run an agent
(``invoke_agent``). Agents that take any provider (aider, opencode) name it in the model
(``anthropic/claude-sonnet-4-5``).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

__all__ = ["is_api_adapter", "operation_name", "provider_name", "step_type"]

# The provider behind each built-in adapter, as the GenAI semantic conventions name it.
_PROVIDERS: Final = MappingProxyType(
    {
        "anthropic-api": "anthropic",
        "claude-code": "anthropic",
        "openai-api": "openai",
        "codex": "openai",
        "gemini-api": "gcp.gemini",
        "gemini-cli": "gcp.gemini",
        "mock": "mock",
    }
)
# A model's own prefix (``openai/gpt-5``) → the provider, for agents that take any.
_PREFIXES: Final = MappingProxyType(
    {
        "anthropic": "anthropic",
        "openai": "openai",
        "gemini": "gcp.gemini",
        "google": "gcp.gemini",
        "openrouter": "openrouter",
        "azure": "azure.ai.openai",
        "bedrock": "aws.bedrock",
        "deepseek": "deepseek",
        "mistral": "mistral_ai",
        "groq": "groq",
        "xai": "x_ai",
    }
)
UNKNOWN: Final = "unknown"


def is_api_adapter(adapter: str) -> bool:
    """Whether ``adapter`` makes one model call per attempt (the ``*-api`` adapters)."""
    return adapter.endswith("-api")


def provider_name(adapter: str, model: str | None) -> str:
    """``gen_ai.provider.name`` of an attempt of ``adapter`` with ``model``."""
    known = _PROVIDERS.get(adapter)
    if known is not None:
        return known
    if model and "/" in model:
        return _PREFIXES.get(model.split("/", 1)[0].lower(), UNKNOWN)
    return UNKNOWN


def operation_name(adapter: str) -> str:
    """``gen_ai.operation.name`` of one attempt: ``chat`` or ``invoke_agent``."""
    return "chat" if is_api_adapter(adapter) else "invoke_agent"


def step_type(adapter: str) -> str:
    """The ``step_type`` label of an attempt: ``api_call`` or ``agent_run``."""
    return "api_call" if is_api_adapter(adapter) else "agent_run"
