"""An AutoGen agent for backstay: ``build(kit)`` returns the ``AssistantAgent``.

Its model client and tools come from the kit, so every model call goes through
backstay's model gate and every tool call through its tool gate. A suite task names it
as ``agent: notes_assistant:build`` (with this folder on ``PYTHONPATH``).
"""

from __future__ import annotations

from typing import Any

from autogen_agentchat.agents import AssistantAgent


def build(kit: Any) -> AssistantAgent:
    return AssistantAgent(
        "notes",
        model_client=kit.model_client,
        tools=kit.tools,
        system_message="You keep short notes in the workspace. Use write_file to save them.",
        reflect_on_tool_use=True,
    )
