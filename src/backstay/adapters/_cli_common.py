"""What the agent CLI adapters share: the prompt as one command-line argument, and a
run's environment (the request's, with a private home and a fallback search path)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Final

from backstay.adapters.contract import AgentRequest
from backstay.agents.home import private_home
from backstay.errors import ConfigError

__all__ = ["DEFAULT_PATH", "MAX_PROMPT_BYTES", "home_run_env", "prompt_argument"]

# A run's PATH when the request's environment has none: tools run shell commands.
DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
# Linux refuses a single argument over 128 KiB (MAX_ARG_STRLEN); a little is kept spare.
MAX_PROMPT_BYTES: Final = 120_000


def prompt_argument(request: AgentRequest) -> str:
    """The request's prompt, to pass as one argument; ``ConfigError`` naming ``prompt``
    when it is longer than an argument may be."""
    prompt = request.read_prompt()
    if len(prompt.encode("utf-8")) > MAX_PROMPT_BYTES:
        raise ConfigError(
            f"is longer than the {MAX_PROMPT_BYTES} bytes a command-line argument may hold",
            where="prompt",
        )
    return prompt


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
