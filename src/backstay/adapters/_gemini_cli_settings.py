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
  file replacing the CLI's own system prompt).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from backstay._checks import check_env_names, check_launcher, check_number, check_url
from backstay.adapters.pricing import ModelPrice, parse_prices
from backstay.errors import ConfigError

__all__ = ["CONFIG_KEYS", "SYSTEM_PROMPT_MODES", "GeminiCliSettings", "parse_settings"]

CONFIG_KEYS: Final = frozenset(
    {
        "binary",
        "base_url",
        "launcher",
        "pass_env",
        "prices",
        "max_turns",
        "cli_retries",
        "system_prompt_mode",
    }
)
SYSTEM_PROMPT_MODES: Final = ("append", "replace")
_NAME: Final = "gemini-cli"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GeminiCliSettings:
    """The adapter's settings, checked (see the module docstring)."""

    binary: str | None = None
    base_url: str | None = None
    launcher: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()
    prices: Mapping[str, ModelPrice] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    max_turns: int | None = None
    cli_retries: int = 0
    system_prompt_mode: str = "append"


def _reworded(err: ConfigError) -> ConfigError:
    return ConfigError(f"adapter {_NAME!r}: {err.reason}", where=err.where)


def parse_settings(config: Mapping[str, Any]) -> GeminiCliSettings:
    """``config`` as settings; ``ConfigError`` naming the key. Unknown keys are rejected
    by ``BaseAdapter.validate_config``."""
    try:
        return _parse(config)
    except ConfigError as err:
        raise _reworded(err) from None


def _parse(config: Mapping[str, Any]) -> GeminiCliSettings:
    binary = config.get("binary")
    if binary is not None and (not isinstance(binary, str) or not binary):
        raise ConfigError(
            f"must be a path to the gemini program, got {binary!r}", where="config.binary"
        )
    base_url = config.get("base_url")
    if base_url is not None:
        check_url(base_url, where="config.base_url")
    max_turns = config.get("max_turns")
    if max_turns is not None:
        check_number(max_turns, where="config.max_turns", minimum=1, integer=True)
    retries = config.get("cli_retries", 0)
    check_number(retries, where="config.cli_retries", integer=True, maximum=10)
    mode = config.get("system_prompt_mode", "append")
    if mode not in SYSTEM_PROMPT_MODES:
        raise ConfigError(
            f"must be one of {', '.join(SYSTEM_PROMPT_MODES)}, got {mode!r}",
            where="config.system_prompt_mode",
        )
    return GeminiCliSettings(
        binary=binary,
        base_url=base_url,
        launcher=check_launcher(config.get("launcher", ()), where="config.launcher"),
        pass_env=check_env_names(config.get("pass_env", ()), where="config.pass_env"),
        prices=parse_prices(config.get("prices", {}), where="config.prices"),
        max_turns=max_turns,
        cli_retries=retries,
        system_prompt_mode=mode,
    )
