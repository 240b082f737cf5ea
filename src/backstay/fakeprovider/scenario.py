"""``Scenario``: everything the fake provider does besides speaking the wire formats —
what it answers (``Reply``), which failures it injects (``Fault``) and the rate limit it
enforces (``RateLimit``). Frozen and validated; ``load_scenario`` reads one from YAML.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from backstay._checks import check_name, check_number
from backstay.errors import ConfigError
from backstay.fakeprovider.faults import Fault

__all__ = ["RateLimit", "Reply", "Scenario", "ToolCall"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A call of the tool ``name`` with JSON ``arguments``, made when the request offers
    a tool of that name and holds no tool result yet."""

    name: str
    arguments: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_name(self.name, where="tool_call.name")
        if not isinstance(self.arguments, Mapping):
            raise ConfigError(
                f"must be a mapping, got {self.arguments!r}", where="tool_call.arguments"
            )
        try:
            json.dumps(dict(self.arguments))
        except (TypeError, ValueError) as err:
            raise ConfigError(f"must be JSON: {err}", where="tool_call.arguments") from None
        object.__setattr__(self, "arguments", MappingProxyType(dict(self.arguments)))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """What the model answers: ``text`` (``None``: derived from the prompt) and, first,
    an optional ``tool_call``."""

    text: str | None = None
    tool_call: ToolCall | None = None

    def __post_init__(self) -> None:
        if self.text is not None and not isinstance(self.text, str):
            raise ConfigError(f"must be a string, got {self.text!r}", where="reply.text")
        if self.tool_call is not None and not isinstance(self.tool_call, ToolCall):
            raise ConfigError(
                f"must be a ToolCall, got {self.tool_call!r}", where="reply.tool_call"
            )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RateLimit:
    """An enforced limit: requests and/or tokens per minute (``None``: not limited)."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None:
                check_number(value, where=f"rate_limit.{name}", minimum=1, integer=True)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """The faults (checked in order, the first that applies wins), the reply, the
    enforced rate limit, and the ``seed`` of probability faults."""

    faults: tuple[Fault, ...] = ()
    reply: Reply = Reply()
    rate_limit: RateLimit | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.faults, tuple) or not all(isinstance(f, Fault) for f in self.faults):
            raise ConfigError("must be a tuple of Fault", where="faults")
        if not isinstance(self.reply, Reply):
            raise ConfigError(f"must be a Reply, got {self.reply!r}", where="reply")
        if self.rate_limit is not None and not isinstance(self.rate_limit, RateLimit):
            raise ConfigError(f"must be a RateLimit, got {self.rate_limit!r}", where="rate_limit")
        check_number(self.seed, where="seed", minimum=-(2**63), integer=True)

    def with_faults(self, *faults: Fault) -> Scenario:
        """This scenario with ``faults`` appended."""
        return dataclasses.replace(self, faults=(*self.faults, *faults))
