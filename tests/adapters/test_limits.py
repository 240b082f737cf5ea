from __future__ import annotations

import pytest

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.cli.codex import CodexAdapter
from backstay.adapters.limits import apply_task_limits
from backstay.errors import ConfigError
from backstay.runtime.engine_adapter import RuntimeTaskAdapter


def test_max_turns_becomes_claude_codes_own_setting() -> None:
    assert apply_task_limits(ClaudeCodeAdapter, {"x": 1}, {"max_turns": 3}) == {
        "x": 1,
        "max_turns": 3,
    }


def test_a_task_limit_wins_over_the_adapter_option() -> None:
    config = apply_task_limits(AnthropicApiAdapter, {"max_tokens": 4096}, {"max_output_tokens": 64})
    assert config == {"max_tokens": 64}


def test_runtime_limits_go_into_the_nested_limits_mapping() -> None:
    config = apply_task_limits(
        RuntimeTaskAdapter, {"limits": {"max_steps": 9}}, {"max_turns": 4, "max_cost_usd": 0.5}
    )
    assert config["limits"] == {"max_steps": 9, "max_model_calls": 4, "max_cost_usd": 0.5}
    RuntimeTaskAdapter().validate_config({"agent": "m:f", **config})


def test_a_limit_the_adapter_cannot_enforce_is_refused() -> None:
    with pytest.raises(ConfigError, match="cannot enforce max_turns"):
        apply_task_limits(CodexAdapter, {}, {"max_turns": 3})
