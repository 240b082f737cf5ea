"""``BreakerSettings``: when a circuit opens, how long it stays open, how it probes.

Frozen and validated on construction: a bad value raises ``ConfigError`` naming the field
(``where="breaker.<field>"``). Variants are made with ``dataclasses.replace`` or
``settings.derive(**changes)``, which validate again.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from typing import Any, Final

from backstay._checks import check_number
from backstay.errors import ConfigError
from backstay.taxonomy import FailureKind

__all__ = [
    "DEFAULT_COUNTED_KINDS",
    "TIME_WINDOW_BUCKETS",
    "BreakerSettings",
    "WindowKind",
]

DEFAULT_FAILURE_THRESHOLD: Final = 5
DEFAULT_FAILURE_RATE_THRESHOLD: Final = 0.5
DEFAULT_WINDOW_CALLS: Final = 20
DEFAULT_WINDOW_S: Final = 60.0
DEFAULT_MINIMUM_CALLS: Final = 10
DEFAULT_OPEN_DURATION_S: Final = 30.0
DEFAULT_HALF_OPEN_MAX_PROBES: Final = 1
DEFAULT_SUCCESS_THRESHOLD: Final = 1
# A probe whose process died never reports back; after this long its slot is given again.
DEFAULT_PROBE_TIMEOUT_S: Final = 300.0
# Count windows are bit masks: one bit per call. Larger windows belong in a time window.
MAX_WINDOW_CALLS: Final = 1000
# A time window is kept as this many buckets of ``window_s / TIME_WINDOW_BUCKETS`` seconds.
TIME_WINDOW_BUCKETS: Final = 10

# Failures that say the far side is unwell. Client mistakes (invalid_request, context_limit,
# content_policy), account states (auth, quota_exhausted), pacing (rate_limit, which the
# rate limiter handles with the exact wait), our own limits and cancellation do not.
DEFAULT_COUNTED_KINDS: Final = frozenset(
    {FailureKind.NETWORK, FailureKind.TIMEOUT, FailureKind.SERVER_ERROR, FailureKind.UNKNOWN}
)


class WindowKind(enum.StrEnum):
    """How the failure-rate window is measured: the last N calls, or the last T seconds."""

    COUNT = "count"
    TIME = "time"


def _where(field: str) -> str:
    return f"breaker.{field}"


def _number(value: object, field: str, *, minimum: float, integer: bool = False) -> None:
    check_number(value, where=_where(field), minimum=minimum, integer=integer)


def _kinds(values: object) -> frozenset[FailureKind]:
    where = _where("counted_kinds")
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ConfigError(f"must be a set of failure kinds, got {values!r}", where=where)
    out: set[FailureKind] = set()
    for value in values:
        try:
            kind = FailureKind(value)
        except ValueError:
            raise ConfigError(f"{value!r} is not a failure kind", where=where) from None
        if kind is FailureKind.CANCELLED:
            raise ConfigError("cancelled never counts as a failure", where=where)
        out.add(kind)
    return frozenset(out)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BreakerSettings:
    """When a circuit opens and how it recovers. Shared by every breaker of a registry.

    * Closed → open on ``failure_threshold`` consecutive counted failures, or when counted
      failures reach ``failure_rate_threshold`` of the calls in the window once the window
      holds ``minimum_calls`` calls. ``None`` turns either rule off (not both).
    * Open for ``open_duration_s``, then half-open: ``half_open_max_probes`` callers get
      through; ``success_threshold`` probe successes close, any counted probe failure
      reopens.
    """

    failure_threshold: int | None = DEFAULT_FAILURE_THRESHOLD
    failure_rate_threshold: float | None = DEFAULT_FAILURE_RATE_THRESHOLD
    window_kind: WindowKind = WindowKind.COUNT
    window_calls: int = DEFAULT_WINDOW_CALLS
    window_s: float = DEFAULT_WINDOW_S
    minimum_calls: int = DEFAULT_MINIMUM_CALLS
    open_duration_s: float = DEFAULT_OPEN_DURATION_S
    half_open_max_probes: int = DEFAULT_HALF_OPEN_MAX_PROBES
    success_threshold: int = DEFAULT_SUCCESS_THRESHOLD
    probe_timeout_s: float = DEFAULT_PROBE_TIMEOUT_S
    counted_kinds: frozenset[FailureKind] = DEFAULT_COUNTED_KINDS

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if self.failure_threshold is not None:
            _number(self.failure_threshold, "failure_threshold", minimum=1, integer=True)
        if self.failure_rate_threshold is not None:
            _number(self.failure_rate_threshold, "failure_rate_threshold", minimum=0.0)
            if not 0.0 < self.failure_rate_threshold <= 1.0:
                raise ConfigError(
                    f"is a fraction in (0, 1], got {self.failure_rate_threshold!r}",
                    where=_where("failure_rate_threshold"),
                )
        if self.failure_threshold is None and self.failure_rate_threshold is None:
            raise ConfigError(
                "set failure_threshold, failure_rate_threshold or both; with neither the "
                "circuit could never open",
                where=_where("failure_threshold"),
            )
        try:
            set_(self, "window_kind", WindowKind(self.window_kind))
        except ValueError:
            raise ConfigError(
                f"must be 'count' or 'time', got {self.window_kind!r}",
                where=_where("window_kind"),
            ) from None
        _number(self.window_calls, "window_calls", minimum=1, integer=True)
        if self.window_calls > MAX_WINDOW_CALLS:
            raise ConfigError(
                f"must be <= {MAX_WINDOW_CALLS} (use a time window beyond), "
                f"got {self.window_calls!r}",
                where=_where("window_calls"),
            )
        _number(self.window_s, "window_s", minimum=0.0)
        if self.window_s <= 0.0:
            raise ConfigError(f"must be > 0, got {self.window_s!r}", where=_where("window_s"))
        _number(self.minimum_calls, "minimum_calls", minimum=1, integer=True)
        if self.window_kind is WindowKind.COUNT and self.minimum_calls > self.window_calls:
            raise ConfigError(
                f"must be <= window_calls ({self.window_calls}) or the rate never trips, "
                f"got {self.minimum_calls}",
                where=_where("minimum_calls"),
            )
        _number(self.open_duration_s, "open_duration_s", minimum=0.0)
        _number(self.half_open_max_probes, "half_open_max_probes", minimum=1, integer=True)
        _number(self.success_threshold, "success_threshold", minimum=1, integer=True)
        if self.success_threshold > self.half_open_max_probes:
            raise ConfigError(
                f"must be <= half_open_max_probes ({self.half_open_max_probes}): a half-open "
                f"round admits no more probes than that, got {self.success_threshold}",
                where=_where("success_threshold"),
            )
        _number(self.probe_timeout_s, "probe_timeout_s", minimum=0.0)
        if self.probe_timeout_s <= 0.0:
            raise ConfigError(
                f"must be > 0, got {self.probe_timeout_s!r}", where=_where("probe_timeout_s")
            )
        set_(self, "counted_kinds", _kinds(self.counted_kinds))

    @property
    def uses_window(self) -> bool:
        """Whether calls are recorded in a failure-rate window at all."""
        return self.failure_rate_threshold is not None

    @property
    def bucket_s(self) -> float:
        """The width of one time-window bucket."""
        return self.window_s / TIME_WINDOW_BUCKETS

    def counts(self, kind: FailureKind) -> bool:
        """Whether a failure of ``kind`` counts towards opening (and fails a probe)."""
        return kind in self.counted_kinds

    def derive(self, **changes: Any) -> BreakerSettings:
        """These settings with ``changes`` applied, validated again."""
        return dataclasses.replace(self, **changes)
