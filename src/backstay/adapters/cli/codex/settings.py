"""The ``codex`` adapter's settings, and the private ``CODEX_HOME`` of one run.

Codex ignores ``OPENAI_BASE_URL``: its endpoint must be a custom model provider, whose
``base_url`` is the ``base_url`` setting, else that variable of the request's environment
(``with_endpoint``), and whose account headers come from ``OPENAI_ORGANIZATION`` and
``OPENAI_PROJECT`` as for Codex's built-in provider. Each run
gets a fresh home whose ``config.toml`` (read with ``--strict-config``, so a key Codex does
not know is an error, not a silent no-op) names that provider with Codex's own retries
off (``request_max_retries = 0``, ``stream_max_retries = 0``: backstay's policy decides),
update checks and analytics off, and the tier mapped onto Codex's settings.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from backstay._checks import check_name, check_number
from backstay.adapters.contract import TierConfig
from backstay.adapters.pricing import ModelPrice, parse_prices
from backstay.errors import ConfigError

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
DEFAULT_KEY_ENV: Final = "OPENAI_API_KEY"
# The standard variable Codex ignores, written into the run's config.toml instead.
BASE_URL_ENV: Final = "OPENAI_BASE_URL"
# Header → the variable Codex reads it from, as its built-in OpenAI provider does.
ACCOUNT_HEADERS: Final[Mapping[str, str]] = MappingProxyType(
    {"OpenAI-Organization": "OPENAI_ORGANIZATION", "OpenAI-Project": "OPENAI_PROJECT"}
)
# Codex's own limit on a silent stream; backstay's stall limit usually ends a run first.
DEFAULT_STREAM_IDLE_TIMEOUT_S: Final = 300.0
REASONING_EFFORTS: Final = ("minimal", "low", "medium", "high", "xhigh")
PROVIDER_ID: Final = "backstay"
# Tier tool names → the Codex feature that offers them (``features.<name> = false``
# removes the tool); web search is a setting of its own.
TOOL_FEATURES: Final[Mapping[str, str]] = MappingProxyType(
    {"shell": "shell_tool", "view_image": "view_image", "multi_agent": "multi_agent"}
)
WEB_SEARCH: Final = "web_search"
KNOWN_TOOLS: Final = (*TOOL_FEATURES, WEB_SEARCH)
CONFIG_KEYS: Final = frozenset(
    {"binary", "base_url", "api_key_env", "stream_idle_timeout_s", "reasoning_effort", "prices"}
)


def check_base_url(value: object, *, where: str) -> str:
    """An ``http(s)://`` URL without a trailing slash; ``ConfigError`` otherwise."""
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigError(f"must be an http:// or https:// URL, got {value!r}", where=where)
    return value.rstrip("/")


def check_env_name(value: object, *, where: str) -> str:
    """An environment variable name."""
    check_name(value, where=where)
    assert isinstance(value, str)  # noqa: S101 - check_name ensures it
    if not value.replace("_", "a").isalnum() or value[0].isdigit():
        raise ConfigError(f"must be an environment variable name, got {value!r}", where=where)
    return value


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CodexSettings:
    """``AgentRequest.config`` of the ``codex`` adapter, checked (see docs/agents/codex.md).

    * ``binary``: the ``codex`` program to run (default: the managed install, then PATH).
    * ``base_url``: the Responses API base (``…/v1``); ``None``: ``OPENAI_BASE_URL`` of
      the request's environment, else ``DEFAULT_BASE_URL`` (``with_endpoint``).
    * ``api_key_env``: the variable of the request's ``env`` holding the key.
    * ``stream_idle_timeout_s``: Codex's own limit on a silent stream.
    * ``reasoning_effort``: ``model_reasoning_effort``, when given.
    * ``prices``: model → price per million tokens (Codex reports no cost).
    """

    binary: str | None = None
    base_url: str | None = None
    api_key_env: str = DEFAULT_KEY_ENV
    stream_idle_timeout_s: float = DEFAULT_STREAM_IDLE_TIMEOUT_S
    reasoning_effort: str | None = None
    prices: Mapping[str, ModelPrice] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> CodexSettings:
        """The settings in ``config`` (keys already checked against ``CONFIG_KEYS``)."""
        binary = config.get("binary")
        if binary is not None and (not isinstance(binary, str | Path) or not str(binary)):
            raise ConfigError(f"must be a path, got {binary!r}", where="config.binary")
        idle = config.get("stream_idle_timeout_s", DEFAULT_STREAM_IDLE_TIMEOUT_S)
        check_number(idle, where="config.stream_idle_timeout_s", above=True)
        effort = config.get("reasoning_effort")
        if effort is not None and effort not in REASONING_EFFORTS:
            raise ConfigError(
                f"must be one of {', '.join(REASONING_EFFORTS)}, got {effort!r}",
                where="config.reasoning_effort",
            )
        return cls(
            binary=None if binary is None else str(binary),
            base_url=None
            if config.get("base_url") is None
            else check_base_url(config["base_url"], where="config.base_url"),
            api_key_env=check_env_name(
                config.get("api_key_env", DEFAULT_KEY_ENV), where="config.api_key_env"
            ),
            stream_idle_timeout_s=float(idle),
            reasoning_effort=effort,
            prices=parse_prices(config.get("prices", {}), where="config.prices"),
        )

    def with_endpoint(self, env: Mapping[str, str]) -> CodexSettings:
        """These settings with ``base_url`` decided: the setting, else ``OPENAI_BASE_URL``
        of ``env`` (Codex itself ignores it), else ``DEFAULT_BASE_URL``."""
        return dataclasses.replace(self, base_url=endpoint(self.base_url, env))


def endpoint(configured: str | None, env: Mapping[str, str]) -> str:
    """``configured``, else ``OPENAI_BASE_URL`` of ``env``, else ``DEFAULT_BASE_URL``."""
    if configured is not None:
        return configured
    given = env.get(BASE_URL_ENV, "").strip()
    return check_base_url(given, where=f"env.{BASE_URL_ENV}") if given else DEFAULT_BASE_URL


def _toml(value: str) -> str:
    # A JSON string without ASCII escaping is a valid TOML basic string.
    return json.dumps(value, ensure_ascii=False)


def tool_switches(tier: TierConfig | None) -> dict[str, bool]:
    """Each of ``KNOWN_TOOLS`` → whether the tier lets the agent have it. ``ConfigError``
    naming ``tier.allowed_tools`` for a tool Codex does not have."""
    if tier is None:
        return dict.fromkeys(KNOWN_TOOLS, True)
    if not tier.tools_enabled:
        return dict.fromkeys(KNOWN_TOOLS, False)
    if tier.allowed_tools is None:
        return dict.fromkeys(KNOWN_TOOLS, True)
    unknown = sorted(set(tier.allowed_tools) - set(KNOWN_TOOLS))
    if unknown:
        raise ConfigError(
            f"codex has no tool {unknown[0]!r} (it can allow: {', '.join(KNOWN_TOOLS)})",
            where="tier.allowed_tools",
        )
    return {tool: tool in tier.allowed_tools for tool in KNOWN_TOOLS}


def config_toml(settings: CodexSettings, tier: TierConfig | None) -> str:
    """The ``config.toml`` of one run (``settings.base_url`` unset: the default URL)."""
    tools = tool_switches(tier)
    headers = ", ".join(f"{_toml(h)} = {_toml(v)}" for h, v in ACCOUNT_HEADERS.items())
    lines = [
        f"model_provider = {_toml(PROVIDER_ID)}",
        "check_for_update_on_startup = false",
        f"web_search = {_toml('live' if tools[WEB_SEARCH] else 'disabled')}",
    ]
    if settings.reasoning_effort is not None:
        lines.append(f"model_reasoning_effort = {_toml(settings.reasoning_effort)}")
    if tier is not None and tier.system_prompt:
        lines.append(f"developer_instructions = {_toml(tier.system_prompt)}")
    lines += ["", "[analytics]", "enabled = false", "", "[features]"]
    lines += [
        f"{feature} = {'true' if tools[tool] else 'false'}"
        for tool, feature in TOOL_FEATURES.items()
    ]
    lines += [
        "",
        f"[model_providers.{PROVIDER_ID}]",
        f"name = {_toml(PROVIDER_ID)}",
        f"base_url = {_toml(settings.base_url or DEFAULT_BASE_URL)}",
        f"env_key = {_toml(settings.api_key_env)}",
        f"env_http_headers = {{ {headers} }}",
        'wire_api = "responses"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        f"stream_idle_timeout_ms = {round(settings.stream_idle_timeout_s * 1000)}",
    ]
    return "\n".join(lines) + "\n"
