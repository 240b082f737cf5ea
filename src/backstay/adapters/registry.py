"""Adapters by name, imported only when one is asked for.

Built-in adapters are ``"module:Class"`` strings; third-party adapters register the same
way under the ``backstay.adapters`` entry-point group of their distribution::

    [project.entry-points."backstay.adapters"]
    my-agent = "my_package.adapter:MyAgentAdapter"

A built-in name wins over an entry point of the same name. The names in
``PLANNED_ADAPTERS`` are reserved for adapters backstay will ship; until then asking for
one is a ``ConfigError`` saying so (or an installed entry point fills the name). An
adapter whose optional dependency is missing gives a ``ConfigError`` naming the install
command (``pip install 'backstay[anthropic]'``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from backstay._checks import check_name
from backstay.adapters.contract import Adapter
from backstay.errors import ConfigError

__all__ = [
    "BUILTIN_ADAPTERS",
    "ENTRY_POINT_GROUP",
    "OPTIONAL_DEPENDENCIES",
    "PLANNED_ADAPTERS",
    "adapter_class",
    "adapter_names",
    "get_adapter",
]

ENTRY_POINT_GROUP: Final = "backstay.adapters"

BUILTIN_ADAPTERS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "mock": "backstay.adapters.mock:MockAdapter",
        "anthropic-api": "backstay.adapters.api.anthropic:AnthropicApiAdapter",
        "openai-api": "backstay.adapters.api.openai:OpenAIApiAdapter",
        "gemini-api": "backstay.adapters.api.gemini:GeminiApiAdapter",
        "claude-code": "backstay.adapters.cli.claude_code:ClaudeCodeAdapter",
        "gemini-cli": "backstay.adapters.cli.gemini_cli:GeminiCliAdapter",
        "codex": "backstay.adapters.cli.codex:CodexAdapter",
        "opencode": "backstay.adapters.cli.opencode:OpencodeAdapter",
        "aider": "backstay.adapters.cli.aider:AiderAdapter",
        "agent-runtime": "backstay.runtime.engine_adapter:RuntimeTaskAdapter",
        "langgraph": "backstay.frameworks.tasks:LangGraphTask",
        "pydantic-ai": "backstay.frameworks.tasks:PydanticAITask",
        "llamaindex": "backstay.frameworks.tasks:LlamaIndexTask",
        "autogen": "backstay.frameworks.tasks:AutoGenTask",
    }
)

# Reserved names: what each will drive. Not importable until its module exists. Every
# adapter backstay set out to ship is built in now; the mapping stays for the next ones.
PLANNED_ADAPTERS: Final[Mapping[str, str]] = MappingProxyType({})

# Top-level module an adapter may import → the backstay extra that installs it.
OPTIONAL_DEPENDENCIES: Final[dict[str, str]] = {
    "anthropic": "anthropic",
    "openai": "openai",
    "google": "gemini",
}


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def adapter_names() -> tuple[str, ...]:
    """Every adapter that can be asked for now: built-in and installed, sorted."""
    return tuple(sorted(set(BUILTIN_ADAPTERS) | set(_entry_points())))


def _choices() -> str:
    planned = ", ".join(sorted(set(PLANNED_ADAPTERS) - set(adapter_names())))
    return f"available: {', '.join(adapter_names())}; planned: {planned or 'none'}"


def _missing_module(name: str, target: str, exc: ModuleNotFoundError) -> ConfigError:
    missing = exc.name or ""
    module = target.partition(":")[0]
    if module == missing or module.startswith(f"{missing}."):
        return ConfigError(
            f"adapter {name!r} points at {target!r}, which is not installed", where="adapter"
        )
    top = missing.partition(".")[0]
    extra = OPTIONAL_DEPENDENCIES.get(top)
    command = f"pip install 'backstay[{extra}]'" if extra else f"pip install {top}"
    return ConfigError(
        f"adapter {name!r} needs the {top!r} package, which is not installed: {command}",
        where="adapter",
    )


def _load(name: str, target: str) -> type:
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise _missing_module(name, target, exc) from exc
    try:
        value: object = functools.reduce(getattr, attribute.split("."), module)
    except AttributeError:
        raise ConfigError(f"adapter {name!r}: {target!r} does not exist", where="adapter") from None
    if not isinstance(value, type):
        raise ConfigError(f"adapter {name!r}: {target!r} is not a class", where="adapter")
    return value


# Names other specifications give built-in adapters (the evaluation harness interface calls
# the Anthropic API adapter ``api-direct``); ``adapter_names()`` lists backstay's own.
_ALIASES: Final[Mapping[str, str]] = MappingProxyType({"api-direct": "anthropic-api"})


def adapter_class(name: str) -> type:
    """The class registered as ``name`` (or under an alias), imported now (and only now)."""
    check_name(name, where="adapter")
    name = _ALIASES.get(name, name)
    target = BUILTIN_ADAPTERS.get(name)
    if target is None:
        entry = _entry_points().get(name)
        if entry is not None:
            target = entry.value
        elif name in PLANNED_ADAPTERS:
            raise ConfigError(
                f"adapter {name!r} for {PLANNED_ADAPTERS[name]} is not available yet "
                f"({_choices()})",
                where="adapter",
            )
        else:
            raise ConfigError(f"unknown adapter {name!r} ({_choices()})", where="adapter")
    return _load(name, target)


def get_adapter(name: str) -> Adapter:
    """A new instance of the adapter registered as ``name``."""
    cls = adapter_class(name)
    try:
        adapter = cls()
    except TypeError as exc:
        raise ConfigError(
            f"adapter {name!r}: {cls.__name__} cannot be created without arguments: {exc}",
            where="adapter",
        ) from exc
    if not isinstance(adapter, Adapter):
        raise ConfigError(
            f"adapter {name!r}: {type(adapter).__name__} does not implement the Adapter protocol",
            where="adapter",
        )
    return adapter
