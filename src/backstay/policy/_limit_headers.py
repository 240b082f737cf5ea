"""Reading a provider's own rate-limit headers into plain values (pure; never raises).

* Anthropic: ``anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}``, the reset
  an absolute RFC 3339 time. ``tokens`` falls back to ``input-tokens`` (the part of a
  request known before it is sent).
* OpenAI (and compatible servers): ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}``,
  the reset a relative Go-style duration (``6ms``, ``1m30s``).

Negative values (Azure sends ``-1``) and anything unreadable count as absent.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping
from typing import Final

from backstay.classify._waits import parse_datetime, parse_float, parse_go_duration

REQUESTS: Final = "requests"
TOKENS: Final = "tokens"

_ANTHROPIC_DIMENSIONS: Final = {REQUESTS: ("requests",), TOKENS: ("tokens", "input-tokens")}


@dataclasses.dataclass(frozen=True, slots=True)
class HeaderLimit:
    """One dimension as the provider reports it; ``reset_s`` counts from the response."""

    limit: float | None = None
    remaining: float | None = None
    reset_s: float | None = None

    @property
    def exhausted(self) -> bool:
        return self.remaining is not None and self.remaining <= 0.0


_NOTHING: Final = HeaderLimit()


def _anthropic(headers: Mapping[str, str], dim: str, now: _dt.datetime) -> HeaderLimit:
    prefix = f"anthropic-ratelimit-{dim}-"
    when = parse_datetime(headers.get(prefix + "reset"))
    return HeaderLimit(
        limit=parse_float(headers.get(prefix + "limit")),
        remaining=parse_float(headers.get(prefix + "remaining")),
        reset_s=None if when is None else max(0.0, (when - now).total_seconds()),
    )


def _openai(headers: Mapping[str, str], dim: str) -> HeaderLimit:
    return HeaderLimit(
        limit=parse_float(headers.get(f"x-ratelimit-limit-{dim}")),
        remaining=parse_float(headers.get(f"x-ratelimit-remaining-{dim}")),
        reset_s=parse_go_duration(headers.get(f"x-ratelimit-reset-{dim}")),
    )


def read_limits(headers: Mapping[str, str], now: _dt.datetime) -> dict[str, HeaderLimit]:
    """``{"requests": …, "tokens": …}`` for the dimensions the headers describe.

    ``headers`` must have lower-case names (``classify._http.normalize_headers``).
    """
    out: dict[str, HeaderLimit] = {}
    for dim, names in _ANTHROPIC_DIMENSIONS.items():
        found = [_anthropic(headers, name, now) for name in names] + [_openai(headers, dim)]
        # The first header family that says anything, whole: never a limit from one and a
        # remaining from another.
        first = next((f for f in found if f != _NOTHING), None)
        if first is not None:
            out[dim] = first
    return out
