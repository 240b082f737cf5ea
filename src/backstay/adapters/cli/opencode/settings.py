"""The ``opencode`` adapter's settings, and the configuration of one run.

opencode reads its whole configuration from ``OPENCODE_CONFIG_CONTENT`` (JSON): the
OpenAI provider's ``baseURL`` (under ``options``), its key as ``{env:VAR}`` (so the key
stays in the variable it came in, never in the configuration text), the model, update
and share switches off, and the ``build`` agent shaped by the tier (``prompt``,
``steps`` for the maximum number of turns, ``permission`` for the tools), and with
``request_timeout_s`` the provider's ``headerTimeout`` and ``chunkTimeout`` (opencode's
limits on a response's headers and on the silence between its chunks, 300 s each by
default).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from backstay._checks import check_number
from backstay.adapters.cli.codex.settings import check_base_url, check_env_name, endpoint
from backstay.adapters.contract import TierConfig
from backstay.adapters.pricing import ModelPrice, parse_prices
from backstay.errors import ConfigError

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
DEFAULT_KEY_ENV: Final = "OPENAI_API_KEY"
PROVIDER_ID: Final = "openai"
# After opencode logs an error of a model call, how long it has to report the error itself
# and exit before backstay stops it (it would otherwise retry on its own schedule).
DEFAULT_ERROR_GRACE_S: Final = 0.5
CONFIG_KEYS: Final = frozenset(
    {
        "binary",
        "base_url",
        "api_key_env",
        "max_turns",
        "error_grace_s",
        "prices",
        "request_timeout_s",
    }
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class OpencodeSettings:
    """``AgentRequest.config`` of the ``opencode`` adapter (see docs/agents/opencode.md).

    * ``binary``: the ``opencode`` program (default: the managed install, then PATH).
    * ``base_url``: the OpenAI-compatible API base (``…/v1``; Responses API); ``None``:
      ``OPENAI_BASE_URL`` of the request's environment, else ``DEFAULT_BASE_URL``
      (``with_endpoint``: the configuration names a base URL, so opencode would not
      read the variable itself).
    * ``api_key_env``: the variable of the request's ``env`` holding the key.
    * ``max_turns``: the build agent's ``steps`` (model calls before a forced answer).
    * ``error_grace_s``: see ``DEFAULT_ERROR_GRACE_S``.
    * ``prices``: model → price per million tokens, used when opencode reports no cost.
    * ``request_timeout_s``: the provider's ``headerTimeout`` and ``chunkTimeout``;
      ``None``: opencode's own (300 s); through a gateway: its deadline plus a margin.
    """

    binary: str | None = None
    base_url: str | None = None
    api_key_env: str = DEFAULT_KEY_ENV
    max_turns: int | None = None
    error_grace_s: float = DEFAULT_ERROR_GRACE_S
    prices: Mapping[str, ModelPrice] = dataclasses.field(default_factory=dict)
    request_timeout_s: float | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> OpencodeSettings:
        """The settings in ``config`` (keys already checked against ``CONFIG_KEYS``)."""
        binary = config.get("binary")
        if binary is not None and (not isinstance(binary, str | Path) or not str(binary)):
            raise ConfigError(f"must be a path, got {binary!r}", where="config.binary")
        turns = config.get("max_turns")
        if turns is not None:
            check_number(turns, where="config.max_turns", minimum=1, integer=True)
        grace = config.get("error_grace_s", DEFAULT_ERROR_GRACE_S)
        check_number(grace, where="config.error_grace_s")
        timeout = config.get("request_timeout_s")
        if timeout is not None:
            check_number(timeout, where="config.request_timeout_s", above=True)
        return cls(
            binary=None if binary is None else str(binary),
            base_url=None
            if config.get("base_url") is None
            else check_base_url(config["base_url"], where="config.base_url"),
            api_key_env=check_env_name(
                config.get("api_key_env", DEFAULT_KEY_ENV), where="config.api_key_env"
            ),
            max_turns=turns,
            error_grace_s=float(grace),
            prices=parse_prices(config.get("prices", {}), where="config.prices"),
            request_timeout_s=None if timeout is None else float(timeout),
        )

    def with_endpoint(self, env: Mapping[str, str]) -> OpencodeSettings:
        """These settings with ``base_url`` decided: the setting, else ``OPENAI_BASE_URL``
        of ``env``, else ``DEFAULT_BASE_URL``."""
        return dataclasses.replace(self, base_url=endpoint(self.base_url, env))


def _permission(tier: TierConfig | None) -> dict[str, str]:
    if tier is None or (tier.tools_enabled and tier.allowed_tools is None):
        return {"*": "allow"}
    allowed = () if not tier.tools_enabled else tier.allowed_tools or ()
    return {"*": "deny", **dict.fromkeys(allowed, "allow")}


def config_content(settings: OpencodeSettings, model: str, tier: TierConfig | None) -> str:
    """``OPENCODE_CONFIG_CONTENT`` of one run."""
    build: dict[str, Any] = {"permission": _permission(tier)}
    if tier is not None and tier.system_prompt:
        build["prompt"] = tier.system_prompt
    if settings.max_turns is not None:
        build["steps"] = settings.max_turns
    options: dict[str, Any] = {
        "baseURL": settings.base_url or DEFAULT_BASE_URL,
        "apiKey": f"{{env:{settings.api_key_env}}}",
    }
    if settings.request_timeout_s is not None:
        timeout_ms = max(1, round(settings.request_timeout_s * 1000))
        options |= {"headerTimeout": timeout_ms, "chunkTimeout": timeout_ms}
    config = {
        "autoupdate": False,
        "share": "disabled",
        "provider": {PROVIDER_ID: {"options": options, "models": {model: {}}}},
        "agent": {"build": build},
    }
    return json.dumps(config, ensure_ascii=False)
