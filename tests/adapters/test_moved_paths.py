"""The adapter module paths that moved into ``api/`` and ``cli/`` still import, for one
release: each old module forwards to its new one."""

from __future__ import annotations

import importlib

import pytest

MOVED = {
    "backstay.adapters.anthropic_api": ("backstay.adapters.api.anthropic", "AnthropicApiAdapter"),
    "backstay.adapters.openai_api": ("backstay.adapters.api.openai", "OpenAIApiAdapter"),
    "backstay.adapters.gemini_api": ("backstay.adapters.api.gemini", "GeminiApiAdapter"),
    "backstay.adapters.process": ("backstay.adapters.cli.process", "run_process"),
    "backstay.adapters.orphans": ("backstay.adapters.cli.orphans", "kill_tagged"),
    "backstay.adapters.claude_code": ("backstay.adapters.cli.claude_code", "ClaudeCodeAdapter"),
    "backstay.adapters.codex": ("backstay.adapters.cli.codex", "CodexAdapter"),
    "backstay.adapters.gemini_cli": ("backstay.adapters.cli.gemini_cli", "GeminiCliAdapter"),
    "backstay.adapters.opencode": ("backstay.adapters.cli.opencode", "OpencodeAdapter"),
    "backstay.adapters.aider": ("backstay.adapters.cli.aider", "AiderAdapter"),
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_the_old_module_path_gives_the_same_object(old: str) -> None:
    new, name = MOVED[old]
    assert getattr(importlib.import_module(old), name) is getattr(
        importlib.import_module(new), name
    )


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        _ = importlib.import_module("backstay.adapters.claude_code").NoSuchName
