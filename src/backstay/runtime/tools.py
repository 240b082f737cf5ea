"""``Tool`` and ``ToolPolicy``: the tools a run may call and the rules they are called under.

A tool is a name, a function taking the call's JSON arguments as keywords (sync or async)
and returning JSON, and a JSON schema of its parameters that adapters hand to their
framework. The policy is the runtime's, not the framework's: ``allowed`` is the allowlist
(a tool not on it is never invoked, whatever the model asks), ``approval`` the tools that
wait for a human decision, ``fallbacks`` the tool tried when one fails, ``cacheable`` the
tools whose results are reused for the same arguments within a tenant. A tool that
fails without a fallback is skipped: the model is told it failed and goes on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from collections.abc import Set as AbstractSet
from types import MappingProxyType
from typing import Any

from backstay._checks import check_name
from backstay.errors import ConfigError

__all__ = ["Tool", "ToolPolicy"]

ToolFn = Callable[..., Any | Awaitable[Any]]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """One callable tool. ``parameters`` is a JSON schema of its keyword arguments."""

    name: str
    fn: ToolFn = dataclasses.field(repr=False, compare=False)
    description: str = ""
    parameters: Mapping[str, Any] = dataclasses.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    def __post_init__(self) -> None:
        check_name(self.name, where="tool.name")
        if not callable(self.fn):
            raise ConfigError(f"must be callable, got {self.fn!r}", where=f"tool {self.name}.fn")

    def spec(self) -> dict[str, Any]:
        """Name, description and parameter schema, as frameworks describe a tool."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
        }


def _names(value: object, *, where: str) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, (set, frozenset, list, tuple)):
        raise ConfigError(f"must be a list of tool names, got {value!r}", where=where)
    for name in value:
        check_name(name, where=where)
    return frozenset(value)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToolPolicy:
    """The allowlist and the rules of tool calls (empty ``allowed``: no tool may run)."""

    allowed: AbstractSet[str] = frozenset()
    approval: AbstractSet[str] = frozenset()
    cacheable: AbstractSet[str] = frozenset()
    fallbacks: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed", _names(self.allowed, where="tools.allowed"))
        object.__setattr__(self, "approval", _names(self.approval, where="tools.approval"))
        object.__setattr__(self, "cacheable", _names(self.cacheable, where="tools.cacheable"))
        if not isinstance(self.fallbacks, Mapping):
            raise ConfigError(f"must be a mapping, got {self.fallbacks!r}", where="tools.fallbacks")
        for tool, fallback in self.fallbacks.items():
            check_name(tool, where="tools.fallbacks")
            check_name(fallback, where=f"tools.fallbacks.{tool}")
        object.__setattr__(self, "fallbacks", MappingProxyType(dict(self.fallbacks)))

    def allows(self, name: str) -> bool:
        return name in self.allowed
