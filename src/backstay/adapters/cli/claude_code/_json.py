"""Reading Claude Code's final ``result`` object (``--output-format json|stream-json``).

The answer is its ``result`` text; usage comes from ``usage`` (uncached input, output,
cache reads and writes), ``total_cost_usd`` (Claude's own client-side estimate) and
``num_turns`` (model calls, not counting the CLI's own retries). Only the final object
counts: stream-json's per-message usage is partial.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from backstay.adapters.usage import Usage


class ResultReader:
    """Fed stdout line by line (``on_stdout_line``); keeps only the last result object."""

    __slots__ = ("result",)

    def __init__(self) -> None:
        self.result: dict[str, Any] | None = None

    def line(self, text: str) -> None:
        text = text.strip()
        if not text.startswith("{") or '"result"' not in text:
            return
        try:
            value = json.loads(text)
        except ValueError:
            return
        if isinstance(value, dict) and value.get("type") == "result":
            self.result = value


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def usage_of(result: Mapping[str, Any]) -> Usage:
    """The usage a result object reports; absent or malformed fields count as zero."""
    raw = result.get("usage")
    usage: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    raw_cost = result.get("total_cost_usd")
    cost: float | None = None
    if isinstance(raw_cost, int | float) and not isinstance(raw_cost, bool):
        cost = float(raw_cost) if math.isfinite(raw_cost) and raw_cost >= 0 else None
    return Usage(
        input_tokens=_count(usage.get("input_tokens")),
        output_tokens=_count(usage.get("output_tokens")),
        cache_read_tokens=_count(usage.get("cache_read_input_tokens")),
        cache_write_tokens=_count(usage.get("cache_creation_input_tokens")),
        cost_usd=cost,
        api_calls=_count(result.get("num_turns")),
    )


def answer_of(result: Mapping[str, Any]) -> str:
    """The agent's final answer text ("" when the result has none)."""
    text = result.get("result")
    return text if isinstance(text, str) else ""
