"""The values an ``OperationStore`` keeps and hands out.

* ``OperationRecord``: everything the store remembers about one operation, one immutable
  value (what a row or a hash holds).
* ``Lease``: the right, held by one owner, to run an operation now. Its ``generation`` is
  the fencing token: each new lease on an operation has a larger one, and a store accepts
  ``renew``/``complete``/``release`` only from the lease of the current generation.
* ``CachedResult``: the result of a completed operation, kept until ``expires_at``.
* ``Claim``: what ``claim`` answers — ``Acquired`` (run it), ``Done`` (it already ran:
  here is its result) or ``Busy`` (someone else holds a live lease).

Times are wall-clock UTC seconds since the epoch, so that they mean the same thing in
every process and after a restart. Results are kept as JSON text; ``result`` properties
decode a fresh copy each time, so no caller can change what the store holds.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Mapping
from typing import Any

from backstay.errors import ConfigError

__all__ = [
    "Acquired",
    "Busy",
    "CachedResult",
    "Claim",
    "Done",
    "Lease",
    "OperationRecord",
    "OperationState",
    "decode_result",
    "encode_result",
]


class OperationState(enum.StrEnum):
    """Where an operation stands. An expired lease or result counts as ``idle``."""

    IDLE = "idle"
    LEASED = "leased"
    DONE = "done"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class OperationRecord:
    """What a store remembers about one operation. ``generation`` never goes down."""

    operation_id: str
    generation: int = 0
    state: OperationState = OperationState.IDLE
    owner: str | None = None
    lease_ttl_s: float | None = None
    lease_expires_at: float | None = None
    result_json: str | None = None
    completed_at: float | None = None
    result_expires_at: float | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    """The right of ``owner`` to run ``operation_id``, fenced by ``generation``.

    ``expires_at`` is the expiry when the lease was acquired; ``renew`` pushes the stored
    expiry to ``now + ttl_s`` without changing this value.
    """

    operation_id: str
    owner: str
    generation: int
    ttl_s: float
    expires_at: float


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CachedResult:
    """The recorded result of a completed operation; ignored once ``expires_at`` passes."""

    operation_id: str
    result_json: str
    owner: str
    generation: int
    completed_at: float
    expires_at: float

    @property
    def result(self) -> dict[str, Any]:
        """The result as a new dict (decoded from JSON on every access)."""
        return decode_result(self.result_json)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Acquired:
    """The claim succeeded: run the operation under ``lease``."""

    lease: Lease


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Done:
    """The operation already completed: do not run it again; here is its result."""

    result: CachedResult


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Busy:
    """Another owner holds a live lease until ``expires_at`` (unless it renews)."""

    operation_id: str
    held_by: str
    generation: int
    expires_at: float


Claim = Acquired | Done | Busy


def encode_result(result: Mapping[str, object]) -> str:
    """The JSON text of ``result``; ``ConfigError`` (``where="result"``) when it is not a
    mapping with string keys that JSON can represent (no NaN, no infinities)."""
    if not isinstance(result, Mapping):
        raise ConfigError(f"must be a mapping, got {type(result).__name__}", where="result")
    bad = [key for key in result if not isinstance(key, str)]
    if bad:
        raise ConfigError(f"keys must be strings, got {bad[0]!r}", where="result")
    try:
        return json.dumps(dict(result), allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"must be JSON-serialisable: {exc}", where="result") from None


def decode_result(text: str) -> dict[str, Any]:
    """The mapping ``encode_result`` wrote."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise TypeError(f"a stored result must be a JSON object, got {type(value).__name__}")
    return value
