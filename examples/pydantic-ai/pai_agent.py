"""A Pydantic-AI agent for backstay: ``build(kit)`` returns the ``Agent``.

The model and the tools come from the kit, so every model request goes through
backstay's model gate and every tool call through its tool gate. A suite task names it
as ``agent: pai_agent:build`` (with this folder on ``PYTHONPATH``).
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent


def build(kit: Any) -> Agent[Any, str]:
    return Agent(
        kit.model,
        toolsets=[kit.toolset],
        instructions="You keep short notes in the workspace. Use write_file to save them.",
    )
