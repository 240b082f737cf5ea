"""``Session``: a scripted multi-turn agent session. Each turn's answer is a call of the
shell tool the request offers (the agent CLIs' own: Claude Code ``Bash``, Codex
``exec_command``, Gemini CLI ``run_shell_command``…); after the last turn, the final text.

The turn of a request is read from the conversation it carries: a request holding *k*
tool results is at turn *k + 1*. A retried request therefore gets the same answer, and a
resumed session continues where it was. A request that offers no shell tool (a title or
summary request the CLI makes on the side) is not part of the session: it has no turn.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

from backstay._checks import check_name
from backstay.errors import ConfigError

__all__ = ["DEFAULT_FINAL", "SHELL_TOOLS", "Session", "Turn"]

DEFAULT_FINAL: Final = "All steps done."


def _described(command: str) -> dict[str, Any]:
    return {"command": command, "description": "Run the next scripted step"}


# The shell tools the fake knows, in the order it prefers them when a request offers
# several, with the arguments each takes for one command line.
_SHELL_ARGUMENTS: Final[Mapping[str, Callable[[str], dict[str, Any]]]] = {
    "Bash": _described,  # Claude Code
    "exec_command": lambda command: {"cmd": command},  # Codex
    "run_shell_command": _described,  # Gemini CLI
    "shell_command": lambda command: {"command": command},  # Codex, other versions
    "shell": lambda command: {"command": ["bash", "-lc", command]},  # Codex, older
    "bash": _described,  # opencode
}
SHELL_TOOLS: Final = tuple(_SHELL_ARGUMENTS)


def shell_tool(offered: Collection[str]) -> str | None:
    """The shell tool a session calls among the tools a request ``offered``, if any."""
    return next((name for name in SHELL_TOOLS if name in offered), None)


def shell_arguments(tool: str, command: str) -> dict[str, Any]:
    """The arguments of ``tool`` (one of ``SHELL_TOOLS``) that run ``command``."""
    return _SHELL_ARGUMENTS[tool](command)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One turn of a session: the command line its shell tool call runs."""

    shell: str

    def __post_init__(self) -> None:
        check_name(self.shell, where="turn.shell")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    """The ``turns`` (their shell calls, in order) and the ``final`` text answered once
    the conversation holds a result for every turn."""

    turns: tuple[Turn, ...]
    final: str = DEFAULT_FINAL

    def __post_init__(self) -> None:
        if not isinstance(self.turns, tuple) or not self.turns:
            raise ConfigError("must be a non-empty tuple of Turn", where="session.turns")
        for index, turn in enumerate(self.turns):
            if not isinstance(turn, Turn):
                raise ConfigError(f"must be a Turn, got {turn!r}", where=f"session.turns[{index}]")
        check_name(self.final, where="session.final")

    def turn_of(self, offered: Collection[str], tool_results: int) -> int | None:
        """The turn (from 1) of a request offering the tools ``offered`` and holding
        ``tool_results`` results; ``None`` when it offers no shell tool."""
        if shell_tool(offered) is None:
            return None
        return tool_results + 1

    def command(self, turn: int) -> str | None:
        """The command line of ``turn``; ``None`` past the last turn (the final text)."""
        return self.turns[turn - 1].shell if 1 <= turn <= len(self.turns) else None
