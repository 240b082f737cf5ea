"""The settings the LLM API adapters share, read from ``AgentRequest.config``.

Keys (all optional):

* ``base_url``: the API's base URL (else the provider's variable in the request's
  environment, else the SDK's default);
* ``api_key_env``: the environment variable holding the key (else the provider's usual
  variables, in order);
* ``stream``: stream the reply (default ``true``);
* ``max_tokens``: the reply's token limit (Anthropic requires one: 4096 by default);
* ``temperature``: sampling temperature, 0–2;
* ``prices``: model name → price in USD per million tokens (``backstay.adapters.pricing``);
* ``api``: OpenAI only, ``chat`` (Chat Completions, the default) or ``responses``.

Keys are read from ``request.env``, never from the process environment: the request's
environment is the whole environment an attempt gets.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from backstay._checks import check_number
from backstay.adapters.pricing import ModelPrice, parse_prices
from backstay.errors import ConfigError

__all__ = ["ApiSettings", "parse_settings", "resolve_api_key", "resolve_base_url"]

COMMON_KEYS: Final = frozenset(
    {"base_url", "api_key_env", "stream", "max_tokens", "temperature", "prices"}
)
OPENAI_APIS: Final = ("chat", "responses")
_ENV_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MAX_TEMPERATURE: Final = 2.0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ApiSettings:
    """One API adapter's settings, checked."""

    base_url: str | None = None
    api_key_env: str | None = None
    stream: bool = True
    max_tokens: int | None = None
    temperature: float | None = None
    prices: Mapping[str, ModelPrice] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    api: str = "chat"


def _where(key: str) -> str:
    return f"config.{key}"


def _fail(adapter: str, key: str, reason: str) -> ConfigError:
    return ConfigError(f"adapter {adapter!r}: {reason}", where=_where(key))


def parse_settings(
    adapter: str, config: Mapping[str, Any], *, default_max_tokens: int | None = None
) -> ApiSettings:
    """``config`` as ``ApiSettings``; ``ConfigError`` naming the adapter and the key.
    Unknown keys are the caller's to reject (``BaseAdapter.validate_config``)."""
    base_url = config.get("base_url")
    if base_url is not None and (
        not isinstance(base_url, str) or not base_url.startswith(("http://", "https://"))
    ):
        raise _fail(adapter, "base_url", f"must be an http(s) URL, got {base_url!r}")
    key_env = config.get("api_key_env")
    if key_env is not None and (not isinstance(key_env, str) or not _ENV_NAME.match(key_env)):
        raise _fail(
            adapter,
            "api_key_env",
            "must name an environment variable (letters, digits, _), not hold a key",
        )
    stream = config.get("stream", True)
    if not isinstance(stream, bool):
        raise _fail(adapter, "stream", f"must be true or false, got {stream!r}")
    max_tokens = config.get("max_tokens", default_max_tokens)
    if max_tokens is not None:
        try:
            check_number(max_tokens, where=_where("max_tokens"), minimum=1, integer=True)
        except ConfigError as err:
            raise _fail(adapter, "max_tokens", err.reason) from None
    temperature = config.get("temperature")
    if temperature is not None:
        try:
            check_number(temperature, where=_where("temperature"), maximum=_MAX_TEMPERATURE)
        except ConfigError as err:
            raise _fail(adapter, "temperature", err.reason) from None
    try:
        prices = parse_prices(config.get("prices", {}), where=_where("prices"))
    except ConfigError as err:
        raise ConfigError(f"adapter {adapter!r}: {err.reason}", where=err.where) from None
    api = config.get("api", "chat")
    if api not in OPENAI_APIS:
        raise _fail(adapter, "api", f"must be one of {', '.join(OPENAI_APIS)}, got {api!r}")
    return ApiSettings(
        base_url=base_url,
        api_key_env=key_env,
        stream=stream,
        max_tokens=max_tokens,
        temperature=None if temperature is None else float(temperature),
        prices=prices,
        api=api,
    )


def resolve_api_key(
    settings: ApiSettings, env: Mapping[str, str], variables: tuple[str, ...]
) -> tuple[str | None, str]:
    """The API key from ``env`` and the variable it came from; ``(None, why)`` when no
    variable holds one. ``api_key_env`` alone is read when it is set."""
    names = (settings.api_key_env,) if settings.api_key_env else variables
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value, name
    listed = " or ".join(names)
    hint = "" if settings.api_key_env else " (or name another variable in api_key_env)"
    return None, f"no API key: {listed} is not set in the request's environment{hint}"


def resolve_base_url(settings: ApiSettings, env: Mapping[str, str], variable: str) -> str | None:
    """``base_url`` from the settings, else ``variable`` in ``env``, else ``None``."""
    if settings.base_url:
        return settings.base_url
    value = env.get(variable, "").strip()
    return value or None
