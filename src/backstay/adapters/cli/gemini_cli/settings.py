"""The ``gemini-cli`` adapter's settings, read from ``AgentRequest.config``.

Keys (all optional):

* ``binary``: the ``gemini`` program to run (else the managed install, else ``PATH``);
* ``base_url``: the Gemini API's base URL, without ``/v1beta`` (else
  ``GOOGLE_GEMINI_BASE_URL`` from the request's environment, else the CLI's default);
* ``launcher``: a command prefix the CLI runs under (``["nice"]``), after the request's own;
* ``pass_env``: names of further variables passed from the request's environment;
* ``prices``: model name → price in USD per million tokens (Gemini CLI reports no cost:
  else genai-prices, else unknown);
* ``max_turns``: ``model.maxSessionTurns`` in the run's ``settings.json``;
* ``cli_retries``: the CLI's own retries, ``general.maxAttempts`` minus one (default 0:
  backstay's policy decides);
* ``system_prompt_mode``: how a tier's system prompt is given: ``append`` (the default:
  the run's global ``GEMINI.md`` context file) or ``replace`` (``GEMINI_SYSTEM_MD``, a
  file replacing the CLI's own system prompt);
* ``request_timeout_s``: the CLI's limit on one API request (its response headers, and
  the silence between its chunks), loaded into Node's ``fetch`` by a preload script
  (``fetch_timeouts``; Gemini CLI has no setting of its own: 60 s for the headers). Unset:
  the CLI's own limits; through a gateway: the gateway's deadline plus a margin.
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

__all__ = ["CONFIG_KEYS", "SYSTEM_PROMPT_MODES", "GeminiCliSettings", "parse_settings"]

CONFIG_KEYS: Final = COMMON_KEYS | {"request_timeout_s"}
_NAME: Final = "gemini-cli"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GeminiCliSettings(CliRunSettings):
    """The adapter's settings, checked (see the module docstring)."""

    request_timeout_s: float | None = None


def parse_settings(config: Mapping[str, Any]) -> GeminiCliSettings:
    """``config`` as settings; ``ConfigError`` naming the key. Unknown keys are rejected
    by ``BaseAdapter.validate_config``."""
    shared = parse_cli_settings(config, adapter=_NAME, program="gemini")
    timeout = config.get("request_timeout_s")
    if timeout is not None:
        try:
            check_number(timeout, where="config.request_timeout_s", above=True)
        except ConfigError as err:
            raise reworded(_NAME, err) from None
    return GeminiCliSettings(
        **shared.shared(), request_timeout_s=None if timeout is None else float(timeout)
    )
