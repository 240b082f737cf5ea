"""The ``claude-code`` adapter's settings, read from ``AgentRequest.config``.

Keys (all optional):

* ``binary``: the ``claude`` program to run (else the managed install, else ``PATH``);
* ``base_url``: the Anthropic API's base URL, without ``/v1`` (else ``ANTHROPIC_BASE_URL``
  from the request's environment, else Claude Code's default);
* ``launcher``: a command prefix the CLI runs under (``["nice"]``), after the request's own;
* ``pass_env``: names of further variables passed from the request's environment;
* ``prices``: model name → price in USD per million tokens; a configured price replaces
  Claude Code's own cost estimate;
* ``max_turns``: ``--max-turns``;
* ``cli_retries``: ``CLAUDE_CODE_MAX_RETRIES`` (default 0: backstay's policy decides);
* ``system_prompt_mode``: how a tier's system prompt is given: ``append`` (the default,
  ``--append-system-prompt``) or ``replace`` (``--system-prompt``);
* ``api_timeout_s``: ``API_TIMEOUT_MS``, Claude Code's own limit on one API request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from backstay._checks import check_number
from backstay.adapters.cli.settings import (
    COMMON_KEYS,
    SYSTEM_PROMPT_MODES,
    CliRunSettings,
    parse_cli_settings,
    reworded,
)
from backstay.errors import ConfigError

__all__ = ["CONFIG_KEYS", "SYSTEM_PROMPT_MODES", "ClaudeCodeSettings", "parse_settings"]

CONFIG_KEYS: Final = COMMON_KEYS | {"api_timeout_s"}
_NAME: Final = "claude-code"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ClaudeCodeSettings(CliRunSettings):
    """The adapter's settings, checked (see the module docstring)."""

    api_timeout_s: float | None = None


def parse_settings(config: Mapping[str, Any]) -> ClaudeCodeSettings:
    """``config`` as settings; ``ConfigError`` naming the key. Unknown keys are rejected
    by ``BaseAdapter.validate_config``."""
    shared = parse_cli_settings(config, adapter=_NAME, program="claude")
    api_timeout = config.get("api_timeout_s")
    if api_timeout is not None:
        try:
            check_number(api_timeout, where="config.api_timeout_s", above=True)
        except ConfigError as err:
            raise reworded(_NAME, err) from None
    return ClaudeCodeSettings(
        **shared.shared(), api_timeout_s=None if api_timeout is None else float(api_timeout)
    )
