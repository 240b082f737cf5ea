"""``Usage``: what one attempt (or a whole run) consumed: tokens, cost and model calls.

Token fields follow the Anthropic convention, which every adapter converts to:
``input_tokens`` counts uncached prompt tokens only, and cache reads and writes are counted
apart. An OpenAI-style count (cached tokens *included* in the input) is converted by
subtracting the cached part. ``cost_usd`` is ``None`` when the agent reports no cost
(Codex, Gemini CLI): unknown is not zero.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from backstay._checks import check_number

__all__ = ["Usage", "usage_data"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Tokens, cost and model calls; ``a + b`` adds two of them (a run's attempts)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    api_calls: int = 0

    def __post_init__(self) -> None:
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "api_calls",
        ):
            check_number(getattr(self, name), where=f"usage.{name}", integer=True)
        if self.cost_usd is not None:
            check_number(self.cost_usd, where="usage.cost_usd")

    @property
    def prompt_tokens(self) -> int:
        """Every prompt token sent: uncached input plus cache reads and writes."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def tokens_total(self) -> int:
        """Prompt tokens plus output tokens."""
        return self.prompt_tokens + self.output_tokens

    def __add__(self, other: object) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        if self.cost_usd is None and other.cost_usd is None:
            cost = None
        else:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=cost,
            api_calls=self.api_calls + other.api_calls,
        )


# The fields of a ``Usage``, in order: each a number or ``None`` (its checks).
_USAGE_FIELDS: Final = tuple(field.name for field in dataclasses.fields(Usage))


def usage_data(usage: Usage) -> dict[str, Any]:
    """``dataclasses.asdict(usage)``: a ``Usage``'s fields are numbers (or ``None``), which
    ``asdict`` keeps as they are, so they are read straight, in about half its time (an
    attempt's usage is recorded at its end and in a success's result); any other object
    (a subclass) goes through ``asdict``."""
    if type(usage) is not Usage:
        return dataclasses.asdict(usage)
    return {name: getattr(usage, name) for name in _USAGE_FIELDS}
