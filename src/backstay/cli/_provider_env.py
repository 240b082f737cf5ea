"""The standard variables each adapter reads, for people: ``backstay run --help`` and
``backstay suite check`` show them (``backstay.adapters.provider_env``).

A built-in adapter's variables are read from ``BUILTIN_PROVIDER_ENV``, a table: neither
shows them by importing the adapter (and its SDK glue). Only an adapter installed by an
entry point is imported to ask its class.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import typer.core

from backstay.adapters.provider_env import BUILTIN_PROVIDER_ENV, ProviderEnv, declared_env
from backstay.adapters.registry import adapter_class, adapter_names
from backstay.errors import ConfigError

if TYPE_CHECKING:
    from backstay.config import AdapterOptions

__all__ = ["ProviderHelpCommand", "adapter_env", "env_line", "provider_lines"]


def adapter_env(name: str) -> ProviderEnv:
    """What adapter ``name`` declares: from the table for a built-in one, else from its
    class (``ConfigError`` when it cannot be loaded)."""
    builtin = BUILTIN_PROVIDER_ENV.get(name)
    return builtin if builtin is not None else declared_env(adapter_class(name))


def provider_lines(adapters: Iterable[str] | None = None) -> list[str]:
    """``"anthropic-api: ANTHROPIC_API_KEY, … (key); …"`` for each of ``adapters``
    (default: every adapter available); one that cannot be loaded is left out."""
    lines = []
    for name in adapter_names() if adapters is None else adapters:
        try:
            declared = adapter_env(name)
        except ConfigError:
            continue
        lines.append(f"{name}: {declared.describe()}")
    return lines


def env_line(options: AdapterOptions) -> str | None:
    """What the agents of ``options.adapter`` take from the environment, by name; ``None``
    when that is nothing at all (an adapter with no provider, such as ``mock``)."""
    try:
        declared = adapter_env(options.adapter)
    except ConfigError:
        return None
    named = [f"{options.api_key_env} (api_key_env)"] if options.api_key_env else []
    named += [f"{', '.join(options.pass_env)} (pass_env)"] if options.pass_env else []
    if options.inherit_env and declared.names:
        inherited = f"takes {declared.describe()} from the environment when set"
    elif declared.names:
        inherited = "inherits nothing (inherit_env: false)"
    elif not named:
        return None
    else:
        inherited = "has no provider variables"
    joiner = "also" if options.inherit_env and declared.names else "gets"
    also = f"; {joiner} {', '.join(named)}" if named else ""
    return f"  {options.adapter} {inherited}{also}"


class ProviderHelpCommand(typer.core.TyperCommand):
    """A command whose help ends with the variables each adapter reads, worked out only
    when the help is shown."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        listed = "\n\n".join(provider_lines())
        self.epilog = (
            "Each adapter takes these standard variables from the environment when they "
            f"are set (not with --isolated-env):\n\n{listed}"
        )
        super().format_help(ctx, formatter)
