"""The settings the ``claude-code`` and ``gemini-cli`` adapters share, read from
``AgentRequest.config`` (each adapter's module lists what every key means for its CLI).

``parse_cli_settings`` checks them and raises ``ConfigError`` naming the adapter and the
key; unknown keys are rejected before, by ``BaseAdapter.validate_config``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from backstay._checks import check_env_names, check_launcher, check_number, check_url
from backstay.adapters.pricing import ModelPrice, parse_prices
from backstay.errors import ConfigError

__all__ = [
    "COMMON_KEYS",
    "MAX_CLI_RETRIES",
    "SYSTEM_PROMPT_MODES",
    "CliRunSettings",
    "parse_cli_settings",
    "reworded",
]

COMMON_KEYS: Final = frozenset(
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
MAX_CLI_RETRIES: Final = 10


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CliRunSettings:
    """The shared settings, checked."""

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

    def shared(self) -> dict[str, Any]:
        """These fields by name, to build an adapter's own settings from."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(CliRunSettings)}


def reworded(adapter: str, err: ConfigError) -> ConfigError:
    """``err`` with the adapter's name in front of its reason."""
    return ConfigError(f"adapter {adapter!r}: {err.reason}", where=err.where)


def parse_cli_settings(config: Mapping[str, Any], *, adapter: str, program: str) -> CliRunSettings:
    """The shared settings in ``config`` of ``adapter``, whose CLI is ``program``."""
    try:
        return _parse(config, program)
    except ConfigError as err:
        raise reworded(adapter, err) from None


def _parse(config: Mapping[str, Any], program: str) -> CliRunSettings:
    binary = config.get("binary")
    if binary is not None and (not isinstance(binary, str) or not binary):
        raise ConfigError(
            f"must be a path to the {program} program, got {binary!r}", where="config.binary"
        )
    base_url = config.get("base_url")
    if base_url is not None:
        check_url(base_url, where="config.base_url")
    max_turns = config.get("max_turns")
    if max_turns is not None:
        check_number(max_turns, where="config.max_turns", minimum=1, integer=True)
    retries = config.get("cli_retries", 0)
    check_number(retries, where="config.cli_retries", integer=True, maximum=MAX_CLI_RETRIES)
    mode = config.get("system_prompt_mode", "append")
    if mode not in SYSTEM_PROMPT_MODES:
        raise ConfigError(
            f"must be one of {', '.join(SYSTEM_PROMPT_MODES)}, got {mode!r}",
            where="config.system_prompt_mode",
        )
    return CliRunSettings(
        binary=binary,
        base_url=base_url,
        launcher=check_launcher(config.get("launcher", ()), where="config.launcher"),
        pass_env=check_env_names(config.get("pass_env", ()), where="config.pass_env"),
        prices=parse_prices(config.get("prices", {}), where="config.prices"),
        max_turns=max_turns,
        cli_retries=retries,
        system_prompt_mode=mode,
    )
