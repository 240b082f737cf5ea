"""A kit speaking the Anthropic Messages API (``api: anthropic``): the Pydantic-AI adapter
with the real package and the official anthropic SDK against the fake provider's
Anthropic endpoint; the adapters whose kits build OpenAI models only refuse it."""

from __future__ import annotations

from pathlib import Path

import pytest

from backstay.errors import ConfigError
from backstay.frameworks import framework_adapter
from backstay.frameworks.pydantic_ai import PydanticAIAdapter, make_agent
from backstay.runtime import FrameworkAdapter

from . import support

MODEL = "claude-sonnet-4-6"


def _pydantic_ai(base_url: str) -> FrameworkAdapter:
    return PydanticAIAdapter(
        base_url=base_url.removesuffix("/v1"), api_key="test-key", model=MODEL, api="anthropic"
    )


def test_a_pydantic_ai_agent_on_anthropic_pauses_for_approval_and_resumes(
    tmp_path: Path,
) -> None:
    support.check_approval_then_resume(_pydantic_ai, tmp_path)


def test_a_pydantic_ai_agent_on_anthropic_has_its_rate_limit_retried_by_backstay_only(
    tmp_path: Path,
) -> None:
    support.check_rate_limit_retried_by_backstay_only(_pydantic_ai, tmp_path)


def test_api_anthropic_reads_the_anthropic_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    adapter = make_agent({"api": "anthropic", "model": MODEL})
    assert adapter.settings.api == "anthropic"
    assert adapter.settings.api_key == "sk-ant-from-env"


@pytest.mark.parametrize(
    ("name", "api"), [("langgraph", "anthropic"), ("autogen", "anthropic"), ("pydantic-ai", "grpc")]
)
def test_a_model_api_the_kit_does_not_build_is_a_config_error(name: str, api: str) -> None:
    with pytest.raises(ConfigError, match=r"config\.api"):
        framework_adapter(name, {"api": api, "model": MODEL})
