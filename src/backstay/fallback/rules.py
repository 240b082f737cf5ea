"""``FallbackRules``: the one table saying which failures move work to another candidate.

Each ``FailureKind`` has one ``Move``; the same table decides the retry (a kind that does
not move is retried on the same candidate as the retry policy says), the fallback, the
candidate's cooldown and, through the breaker's counted kinds, its circuit:

* ``rate_limit`` → ``next_if_long_wait``: next when the wait (Retry-After,
  ``retry_after_s``, ``resets_at``) exceeds ``long_wait_s``, else retried here; the
  candidate cools down for the wait;
* ``server_error``, ``timeout``, ``network``, ``unknown`` → ``next``; cooled down for a
  Retry-After when one is given (the breaker counts these kinds);
* ``quota_exhausted`` → ``next``; cooled down until ``resets_at``, else
  ``quota_cooldown_s``;
* ``context_limit`` → ``larger_context``: only to a candidate with a larger context
  window; no cooldown (the request was too big, the model is not unwell);
* ``auth`` → ``next_credential``: the next candidate with another credential; every
  candidate of the failing credential cools down for ``auth_cooldown_s``;
* ``content_policy`` → ``never`` (configurable: ``next``);
* ``invalid_request``, ``output_invalid``, ``limit_exceeded``, ``security_violation`` →
  ``never``; ``cancelled`` → ``never`` (cannot be changed).

A failure after a stream's first token (``details.stream_interrupted``, or an
``AdapterError`` with ``partial_output``) never moves, whatever its kind.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
from collections.abc import Mapping
from typing import Any, Final

from backstay._checks import check_number
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.taxonomy import FailureKind

__all__ = [
    "DEFAULT_AUTH_COOLDOWN_S",
    "DEFAULT_LONG_WAIT_S",
    "DEFAULT_MOVES",
    "DEFAULT_QUOTA_COOLDOWN_S",
    "FallbackRules",
    "Move",
    "failure_wait_s",
    "stream_interrupted",
]


class Move(enum.StrEnum):
    """Where a failure of a kind sends the next attempt."""

    NEXT = "next"
    NEXT_IF_LONG_WAIT = "next_if_long_wait"
    LARGER_CONTEXT = "larger_context"
    NEXT_CREDENTIAL = "next_credential"
    NEVER = "never"


# A rate limit asking to wait longer than this moves on; a shorter one is waited out here.
DEFAULT_LONG_WAIT_S: Final = 10.0
# A rejected credential stays out of the chain this long (a key is rarely fixed sooner).
DEFAULT_AUTH_COOLDOWN_S: Final = 3600.0
# A spent quota without a known reset stays out of the chain this long.
DEFAULT_QUOTA_COOLDOWN_S: Final = 3600.0

_K = FailureKind
DEFAULT_MOVES: Final[Mapping[FailureKind, Move]] = {
    _K.NETWORK: Move.NEXT,
    _K.TIMEOUT: Move.NEXT,
    _K.RATE_LIMIT: Move.NEXT_IF_LONG_WAIT,
    _K.SERVER_ERROR: Move.NEXT,
    _K.CONTEXT_LIMIT: Move.LARGER_CONTEXT,
    _K.CONTENT_POLICY: Move.NEVER,
    _K.QUOTA_EXHAUSTED: Move.NEXT,
    _K.AUTH: Move.NEXT_CREDENTIAL,
    _K.INVALID_REQUEST: Move.NEVER,
    _K.OUTPUT_INVALID: Move.NEVER,
    _K.LIMIT_EXCEEDED: Move.NEVER,
    _K.SECURITY_VIOLATION: Move.NEVER,
    _K.CANCELLED: Move.NEVER,
    _K.UNKNOWN: Move.NEXT,
}


def _moves(overrides: Mapping[Any, Any]) -> dict[FailureKind, Move]:
    if not isinstance(overrides, Mapping):
        raise ConfigError("must map failure kinds to moves", where="fallback.moves")
    out = dict(DEFAULT_MOVES)
    for key, value in overrides.items():
        where = f"fallback.moves.{key}"
        try:
            kind = FailureKind(key)
        except ValueError:
            raise ConfigError(f"{key!r} is not a failure kind", where=where) from None
        try:
            move = Move(value)
        except ValueError:
            choices = ", ".join(m.value for m in Move)
            raise ConfigError(f"must be one of {choices}, got {value!r}", where=where) from None
        if kind is FailureKind.CANCELLED and move is not Move.NEVER:
            raise ConfigError("a cancelled call never moves", where=where)
        out[kind] = move
    return out


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FallbackRules:
    """The move table (``moves``: overrides merged over ``DEFAULT_MOVES``) and its
    thresholds. Frozen; ``derive(**changes)`` makes a variant."""

    moves: Mapping[FailureKind, Move] = dataclasses.field(default_factory=dict)
    long_wait_s: float = DEFAULT_LONG_WAIT_S
    auth_cooldown_s: float = DEFAULT_AUTH_COOLDOWN_S
    quota_cooldown_s: float = DEFAULT_QUOTA_COOLDOWN_S

    def __post_init__(self) -> None:
        object.__setattr__(self, "moves", _moves(self.moves))
        for name in ("long_wait_s", "auth_cooldown_s", "quota_cooldown_s"):
            check_number(getattr(self, name), where=f"fallback.{name}")

    def derive(self, **changes: Any) -> FallbackRules:
        return dataclasses.replace(self, **changes)

    def move_for(
        self, failure: Failure, *, partial: bool = False, now: _dt.datetime | None = None
    ) -> Move:
        """The move ``failure`` calls for; ``never`` after partial output, and a rate limit
        resolved to ``next`` or ``never`` by its wait."""
        if partial or stream_interrupted(failure):
            return Move.NEVER
        move = self.moves[failure.kind]
        if move is Move.NEXT_IF_LONG_WAIT:
            wait = failure_wait_s(failure, now)
            return Move.NEXT if wait is not None and wait > self.long_wait_s else Move.NEVER
        return move

    def cooldown_s(
        self, failure: Failure, *, partial: bool = False, now: _dt.datetime | None = None
    ) -> float:
        """How long the failing candidate stays out of selection (0: not at all)."""
        move = self.move_for(failure, partial=partial, now=now)
        if move in (Move.NEVER, Move.LARGER_CONTEXT):
            return 0.0
        wait = failure_wait_s(failure, now) or 0.0
        kind = failure.kind
        if kind is FailureKind.AUTH:
            return max(wait, self.auth_cooldown_s)
        if kind is FailureKind.QUOTA_EXHAUSTED and failure.resets_at is None:
            return max(wait, self.quota_cooldown_s)
        return wait

    def to_dict(self) -> dict[str, Any]:
        changed = {str(k): str(v) for k, v in self.moves.items() if DEFAULT_MOVES[k] is not v}
        return {
            "moves": dict(sorted(changed.items())),
            "long_wait_s": self.long_wait_s,
            "auth_cooldown_s": self.auth_cooldown_s,
            "quota_cooldown_s": self.quota_cooldown_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FallbackRules:
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ConfigError(
                f"unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(fields))}",
                where="fallback",
            )
        return cls(**dict(data))


def stream_interrupted(failure: Failure) -> bool:
    """Whether ``failure`` ended a stream that had already delivered output."""
    return bool(failure.details.get("stream_interrupted"))


def failure_wait_s(failure: Failure, now: _dt.datetime | None) -> float | None:
    """How long the provider asked to wait: ``retry_after_s``, else until ``resets_at``."""
    if failure.retry_after_s is not None:
        return failure.retry_after_s
    if failure.resets_at is not None and now is not None:
        return max(0.0, (failure.resets_at - now).total_seconds())
    return None
