"""The enforced rate limit: a token bucket per dimension (requests, tokens) holding a
minute's worth and refilled continuously, and the headers each provider reports it with."""

from __future__ import annotations

import dataclasses
import math

from backstay.fakeprovider._prompt import ANTHROPIC, GEMINI
from backstay.fakeprovider.scenario import RateLimit
from backstay.fakeprovider.wire.base import go_duration, rfc3339
from backstay.policy.bucket import TokenBucket

_MINUTE_S = 60.0


@dataclasses.dataclass(frozen=True, slots=True)
class Denied:
    """Why a request was refused: the dimension short, the wait until it fits, and
    ``too_large`` when it never fits."""

    dimension: str
    retry_after_s: float
    limit: int
    requested: int
    too_large: bool = False


class Limiter:
    """Buckets for the dimensions ``limit`` sets. One event loop; ``now`` is monotonic."""

    def __init__(self, limit: RateLimit, *, now: float) -> None:
        self._buckets: dict[str, TokenBucket] = {}
        for dimension, per_minute in (
            ("requests", limit.requests_per_minute),
            ("tokens", limit.tokens_per_minute),
        ):
            if per_minute is not None:
                self._buckets[dimension] = TokenBucket.full(
                    capacity=per_minute, refill_per_s=per_minute / _MINUTE_S, now=now
                )

    def admit(self, tokens: int, *, now: float) -> Denied | None:
        """Take one request and ``tokens`` tokens, or say why not (taking nothing)."""
        cost = {"requests": 1, "tokens": tokens}
        worst: Denied | None = None
        for dimension, bucket in self._buckets.items():
            need = cost[dimension]
            if need > bucket.capacity:
                return Denied(
                    dimension,
                    bucket.capacity / bucket.refill_per_s,
                    int(bucket.capacity),
                    need,
                    too_large=True,
                )
            short = need - bucket.level(now)
            if short > 0:
                wait = short / bucket.refill_per_s
                if worst is None or wait > worst.retry_after_s:
                    worst = Denied(dimension, wait, int(bucket.capacity), need)
        if worst is not None:
            return worst
        for dimension, bucket in self._buckets.items():
            self._buckets[dimension] = bucket.take(now, cost[dimension])[0]
        return None

    def headers(self, api: str, *, now: float, wall: float) -> dict[str, str]:
        """The provider's rate-limit headers for the state at ``now`` (wall clock ``wall``)."""
        if api == GEMINI:
            return {}
        out: dict[str, str] = {}
        for dimension, bucket in self._buckets.items():
            level = bucket.level(now)
            reset_s = max(0.0, (bucket.capacity - level) / bucket.refill_per_s)
            limit = str(int(bucket.capacity))
            remaining = str(max(0, math.floor(level)))
            if api == ANTHROPIC:
                prefix = f"anthropic-ratelimit-{dimension}-"
                out[prefix + "limit"] = limit
                out[prefix + "remaining"] = remaining
                out[prefix + "reset"] = rfc3339(wall + reset_s)
            else:
                out[f"x-ratelimit-limit-{dimension}"] = limit
                out[f"x-ratelimit-remaining-{dimension}"] = remaining
                out[f"x-ratelimit-reset-{dimension}"] = go_duration(reset_s)
        return out


def fault_headers(api: str, *, limit: int, retry_after_s: float, wall: float) -> dict[str, str]:
    """Rate-limit headers for an injected 429 (requests used up until the retry time)."""
    if api == GEMINI:
        return {}
    if api == ANTHROPIC:
        return {
            "anthropic-ratelimit-requests-limit": str(limit),
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": rfc3339(wall + retry_after_s),
        }
    return {
        "x-ratelimit-limit-requests": str(limit),
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": go_duration(retry_after_s),
    }
