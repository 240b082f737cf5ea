"""What the agent CLI adapters share: the prompt as one command-line argument, and the
fallback program search path of a run's environment."""

from __future__ import annotations

from typing import Final

from backstay.adapters.contract import AgentRequest
from backstay.errors import ConfigError

__all__ = ["DEFAULT_PATH", "MAX_PROMPT_BYTES", "prompt_argument"]

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
