"""The settings of the ``aider`` adapter, read from ``AgentRequest.config``.

Keys (all optional):

* ``binary``: the ``aider`` program to run (else the managed install, else ``PATH``;
  ``backstay.agents.locate``);
* ``base_url``: the base URL of the model's provider (``providers``): for an
  OpenAI-compatible model ``--openai-api-base``, for an ``anthropic/…`` model
  ``ANTHROPIC_API_BASE``, for a ``gemini/…`` one ``GEMINI_API_BASE`` (ending in
  ``/v1beta``); else the provider's variables in the request's environment, else the
  provider's default;
* ``timeout_s``: Aider's request timeout (``--timeout``; default: Aider's 600 s; through
  a gateway, the gateway's deadline plus a margin);
* ``stream``: stream the reply (default ``false``: only a whole reply carries the
  provider's own token counts; streamed, Aider counts tokens itself, approximately);
* ``edit_format``: one of ``EDIT_FORMATS`` (default: Aider's choice for the model);
* ``internal_retries``: how many of Aider's own retries an attempt may make, 0 to
  ``MAX_INTERNAL_RETRIES`` (default 0: the attempt ends at Aider's first retry, and
  backstay's policy decides what comes next);
* ``git``: let Aider use the workspace's git repository (default ``false``: ``--no-git``);
* ``auto_commits``: let Aider commit its edits (needs ``git``; default ``false``);
* ``prices``: model name → price in USD per million tokens, for models Aider has no
  price for (``backstay.adapters.pricing``);
* ``extra_args``: more Aider flags, appended to the command line as given.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from backstay.adapters.pricing import ModelPrice, parse_prices
from backstay.errors import ConfigError

__all__ = [
    "CONFIG_KEYS",
    "EDIT_FORMATS",
    "MAX_INTERNAL_RETRIES",
    "AiderSettings",
    "parse_settings",
]

CONFIG_KEYS: Final = frozenset(
    {
        "binary",
        "base_url",
        "timeout_s",
        "stream",
        "edit_format",
        "internal_retries",
        "git",
        "auto_commits",
        "prices",
        "extra_args",
    }
)
# The edit formats of Aider 0.86 that edit files ("ask", "context" and "help" do not).
EDIT_FORMATS: Final = (
    "whole",
    "diff",
    "diff-fenced",
    "udiff",
    "udiff-simple",
    "patch",
    "architect",
    "editor-whole",
    "editor-diff",
    "editor-diff-fenced",
)
# Aider doubles its retry delay from 0.25 s and stops once it would pass 60 s: after 8.
MAX_INTERNAL_RETRIES: Final = 8
# Flags the adapter sets itself: giving them again in extra_args would contradict it.
_OWN_FLAGS: Final = frozenset(
    {
        "--message",
        "--message-file",
        "--model",
        "--yes-always",
        "--analytics-log",
        "--llm-history-file",
        "--chat-history-file",
        "--input-history-file",
        "--model-settings-file",
    }
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AiderSettings:
    """The adapter's settings, checked (see the module docstring)."""

    binary: str | None = None
    base_url: str | None = None
    timeout_s: float | None = None
    stream: bool = False
    edit_format: str | None = None
    internal_retries: int = 0
    git: bool = False
    auto_commits: bool = False
    prices: Mapping[str, ModelPrice] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    extra_args: tuple[str, ...] = ()


def _fail(key: str, reason: str) -> ConfigError:
    return ConfigError(f"adapter 'aider': {reason}", where=f"config.{key}")


def _flag(config: Mapping[str, Any], key: str, default: bool) -> bool:
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise _fail(key, f"must be true or false, got {value!r}")
    return value


def _strings(config: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = config.get(key, ())
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise _fail(key, f"must be a list of strings, got {value!r}")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise ConfigError(
                f"adapter 'aider': must be a non-empty string, got {item!r}",
                where=f"config.{key}[{i}]",
            )
    return tuple(value)


def _binary(config: Mapping[str, Any]) -> str | None:
    value = config.get("binary")
    if value is not None and (not isinstance(value, str) or not value):
        raise _fail("binary", f"must be the path of the aider program, got {value!r}")
    return value


def _base_url(config: Mapping[str, Any]) -> str | None:
    value = config.get("base_url")
    if value is not None and (
        not isinstance(value, str) or not value.startswith(("http://", "https://"))
    ):
        raise _fail("base_url", f"must be an http(s) URL, got {value!r}")
    return value


def _timeout(config: Mapping[str, Any]) -> float | None:
    value = config.get("timeout_s")
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise _fail("timeout_s", f"must be a number of seconds above 0, got {value!r}")
    return float(value)


def _edit_format(config: Mapping[str, Any]) -> str | None:
    value = config.get("edit_format")
    if value is not None and value not in EDIT_FORMATS:
        raise _fail("edit_format", f"must be one of {', '.join(EDIT_FORMATS)}, got {value!r}")
    return value


def _internal_retries(config: Mapping[str, Any]) -> int:
    value = config.get("internal_retries", 0)
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 0 <= value <= MAX_INTERNAL_RETRIES
    ):
        raise _fail(
            "internal_retries",
            f"must be a whole number from 0 to {MAX_INTERNAL_RETRIES}, got {value!r}",
        )
    return value


def parse_settings(config: Mapping[str, Any]) -> AiderSettings:
    """``config`` as ``AiderSettings``; ``ConfigError`` naming the key that is wrong.
    Unknown keys are the caller's to reject (``BaseAdapter.validate_config``)."""
    git = _flag(config, "git", False)
    auto_commits = _flag(config, "auto_commits", False)
    if auto_commits and not git:
        raise _fail("auto_commits", "needs git: true (Aider commits only inside a repository)")
    extra_args = _strings(config, "extra_args")
    for i, arg in enumerate(extra_args):
        if arg.partition("=")[0] in _OWN_FLAGS:
            raise ConfigError(
                f"adapter 'aider': {arg.partition('=')[0]} is set by the adapter itself",
                where=f"config.extra_args[{i}]",
            )
    try:
        prices = parse_prices(config.get("prices", {}), where="config.prices")
    except ConfigError as err:
        raise ConfigError(f"adapter 'aider': {err.reason}", where=err.where) from None
    return AiderSettings(
        binary=_binary(config),
        base_url=_base_url(config),
        timeout_s=_timeout(config),
        stream=_flag(config, "stream", False),
        edit_format=_edit_format(config),
        internal_retries=_internal_retries(config),
        git=git,
        auto_commits=auto_commits,
        prices=prices,
        extra_args=extra_args,
    )
