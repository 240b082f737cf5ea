"""One request's view of a shared rate limiter: what it reserves, and what it learns.

The transports (``backstay.integrations``) and the gateway hand the retry driver a
``PacedRequest`` per request instead of the shared limiter, so that

* each attempt reserves the request's *estimated tokens* (``estimate_tokens``), not one:
  without it a tokens-per-minute limit cannot pace anything;
* the response's rate-limit headers go back to the limiter with the reservation they
  answer, so that the provider's ``remaining`` is read against what was reserved after
  this request (``RateLimiter.update_from_headers(..., answering=)``), and the limiter
  learns how far its estimates are from what the provider charges;
* a limiter that holds reservations while it discovers a provider's limits
  (``ReservingLimiterLike``) is rechecked and settled through it.

The estimate is the one providers make before counting: the prompt's text at about four
characters a token, plus the output limit the request sets (OpenAI counts ``max_tokens``
against a tokens-per-minute limit up front). It is not a tokenizer; the headers correct it,
and a ``RateLimiter`` scales it by the charged-per-estimated ratio it learns from them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final

from backstay.failure import Failure
from backstay.policy.protocols import (
    RateLimiterLike,
    ReservationLike,
    ReservingLimiterLike,
    is_reserving,
)
from backstay.policy.ratelimit import RateLimiter, Reservation

__all__ = ["PacedRequest", "estimate_parsed", "estimate_tokens"]

CHARS_PER_TOKEN: Final = 4.0
# Fields whose text is not sent to the model (names, ids, enums), in every API's bodies.
_NOT_TEXT: Final = frozenset(
    {"model", "role", "type", "id", "tool_call_id", "tool_use_id", "mime_type", "mimeType"}
)
_OUTPUT_LIMITS: Final = (
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "maxOutputTokens",
)


def _texts(value: object, key: str | None = None) -> Iterator[str]:
    if isinstance(value, str):
        if key not in _NOT_TEXT:
            yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _texts(v, k)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item, key)


def _output_limit(value: object) -> float:
    """The first output-token limit found in ``value`` (``generationConfig`` nests it)."""
    if isinstance(value, dict):
        for name in _OUTPUT_LIMITS:
            found = value.get(name)
            if isinstance(found, int | float) and not isinstance(found, bool) and found > 0:
                return float(found)
        nested = value.get("generationConfig")
        if isinstance(nested, dict):
            return _output_limit(nested)
    return 0.0


def estimate_tokens(content: bytes, *, output: bool = True) -> float:
    """The tokens a request body is expected to cost: the text in it (JSON string values
    other than names and ids) at ``CHARS_PER_TOKEN`` characters a token, plus the output
    limit it sets (unless ``output`` is false: its prompt alone). A body that is not JSON
    counts by its length; an empty one is 0."""
    if not content:
        return 0.0
    try:
        body = json.loads(content)
    except ValueError:
        return float(len(content)) / CHARS_PER_TOKEN
    return estimate_parsed(body, output=output)


def estimate_parsed(body: object, *, output: bool = True) -> float:
    """``estimate_tokens`` of a body already parsed from JSON (a caller that parsed it
    once for other reasons does not parse it again)."""
    chars = sum(len(text) for text in _texts(body))
    return chars / CHARS_PER_TOKEN + (_output_limit(body) if output else 0.0)


class PacedRequest:
    """A ``ReservingLimiterLike`` for one request over the shared ``limiter``: the driver's
    ``tokens`` are replaced by the request's estimate; the latest reservation is kept for
    the headers that answer it."""

    __slots__ = ("_reservation", "_reserving", "limiter", "name", "tokens")

    def __init__(self, limiter: RateLimiterLike, tokens: float) -> None:
        self.limiter = limiter
        self.name = limiter.name
        self.tokens = tokens
        self._reservation: ReservationLike | None = None
        self._reserving: ReservingLimiterLike[Any] | None = (
            limiter if is_reserving(limiter) else None
        )

    def reserve(self, tokens: float = 1.0) -> float:
        """Reserve for the next attempt of this request, placed at once (never held)."""
        del tokens
        return self.limiter.reserve(self.tokens)

    def reservation(self, tokens: float = 1.0) -> ReservationLike:
        """Reserve for the next attempt of this request; held or placed, as the shared
        limiter says (a limiter that cannot hold gives a final wait)."""
        del tokens
        reserving = self._reserving
        if reserving is not None:
            reservation: ReservationLike = reserving.reservation(self.tokens)
        else:
            reservation = Reservation(self.limiter.reserve(self.tokens), 0.0, 0.0)
        self._reservation = reservation
        return reservation

    def recheck(self, reservation: ReservationLike) -> ReservationLike:
        reserving = self._reserving
        if reserving is not None:
            reservation = reserving.recheck(reservation)
        self._reservation = reservation
        return reservation

    def settle(self, reservation: ReservationLike) -> None:
        reserving = self._reserving
        if reserving is not None:
            reserving.settle(reservation)

    def observe(self, failure: Failure) -> None:
        self.limiter.observe(failure)

    def update_from_headers(self, headers: Any, *, refused: bool = False) -> None:
        """The headers of the answer to this request's latest attempt; ``refused``: the
        answer shows a failure (the provider is taken not to have charged for it)."""
        limiter = self.limiter
        if isinstance(limiter, RateLimiter) or getattr(limiter, "learns_answering", False):
            # A shared limiter (backstay.store.redis) reads its answers as RateLimiter does.
            answering = self._reservation
            if not isinstance(answering, Reservation):
                answering = None
            learn = getattr(limiter, "update_from_headers")  # noqa: B009 - either kind
            learn(headers, answering=answering, refused=refused)
            return
        update = getattr(limiter, "update_from_headers", None)
        if update is not None:
            update(headers)
