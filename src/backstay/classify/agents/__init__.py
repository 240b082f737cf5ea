"""Agent CLI output → ``Failure``: one module per CLI, structured fields first, text second."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Final

from backstay.classify.agents import aider, claude_code, codex, gemini_cli, opencode
from backstay.failure import Failure

Checker = Callable[[str, "int | None", _dt.datetime], "Failure | None"]

AGENTS: Final[dict[str, Checker]] = {
    "claude-code": claude_code.check,
    "codex": codex.check,
    "gemini-cli": gemini_cli.check,
    "aider": aider.check,
    "opencode": opencode.check,
}

_ALIASES: Final[dict[str, str]] = {
    "claude": "claude-code",
    "claude_code": "claude-code",
    "claudecode": "claude-code",
    "codex-cli": "codex",
    "gemini": "gemini-cli",
    "gemini_cli": "gemini-cli",
    "aider-chat": "aider",
    "opencode-ai": "opencode",
}


def agent_name(agent: str) -> str | None:
    """The canonical agent name for ``agent`` or one of its aliases; ``None`` if unknown."""
    key = agent.strip().lower()
    if key in AGENTS:
        return key
    return _ALIASES.get(key)
