"""What the agent CLI adapters share: the prompt, which reaches the CLI on its stdin (never
on the command line, where ``ps`` shows it to every local user), and a run's environment
(the request's, with a private home and a fallback search path)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Final

from backstay.adapters.contract import AgentRequest
from backstay.agents.home import private_home

__all__ = ["DEFAULT_PATH", "home_run_env", "prompt_stdin"]

# A run's PATH when the request's environment has none: tools run shell commands.
DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"


def prompt_stdin(request: AgentRequest) -> str:
    """The request's prompt, for ``run_process``'s ``stdin_text``: every CLI adapter but
    Aider's (which reads a private message file) gives it to the CLI that way."""
    return request.read_prompt()


def home_run_env(
    request_env: Mapping[str, str],
    home: Path,
    *,
    owned: Collection[str],
    owned_prefixes: tuple[str, ...],
) -> dict[str, str]:
    """The request's environment less the variables the run sets itself (``owned``, and
    any name starting with one of ``owned_prefixes``), with ``DEFAULT_PATH`` when it has
    no ``PATH``, and the private ``home`` (``private_home``) in place of the caller's."""
    env = {
        name: value
        for name, value in request_env.items()
        if name not in owned and not name.startswith(owned_prefixes)
    }
    env.setdefault("PATH", DEFAULT_PATH)
    return env | private_home(home)
