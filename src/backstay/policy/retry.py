"""``RetryPolicy``: what to retry, how often, how long to wait — and the pure decision.

A policy is frozen, validated on construction (``ConfigError`` names the field and the
reason), serialisable to and from plain dicts, and derived from another with
``policy.derive(**changes)``. ``decide()`` turns (policy, failure, attempt, elapsed time,
previous delay, a random draw) into a ``RetryDecision``; it does no I/O and reads no clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Final

from backstay._checks import check_number
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.policy._delays import base_delays, fixed_delays
from backstay.policy.backoff import Backoff, JitterMode, jittered, next_delay
from backstay.taxonomy import CODES, ErrorCategory, FailureKind, canonical_code

__all__ = ["GiveUpReason", "KindOverride", "RetryDecision", "RetryPolicy", "decide"]

DEFAULT_MAX_ATTEMPTS: Final = 3
DEFAULT_INITIAL_DELAY_S: Final = 0.1
DEFAULT_MAX_DELAY_S: Final = 5.0
DEFAULT_MULTIPLIER: Final = 2.0
DEFAULT_JITTER: Final = 0.1
DEFAULT_MAX_RETRY_AFTER_S: Final = 60.0
# Timers fire early and clocks drift: wait a little past what the provider asked.
RETRY_AFTER_MARGIN_S: Final = 0.05
# ``unknown`` failures are retried once unless a policy says otherwise.
UNKNOWN_MAX_ATTEMPTS: Final = 2


def _where(policy: str, name: str) -> str:
    return f"policy {policy!r}: {name}"


def _number(value: object, *, where: str, minimum: float = 0.0, integer: bool = False) -> None:
    check_number(value, where=where, minimum=minimum, integer=integer)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class KindOverride:
    """Per-kind settings; ``None`` inherits the policy's value. ``max_attempts`` caps."""

    max_attempts: int | None = None
    initial_delay_s: float | None = None
    max_delay_s: float | None = None
    multiplier: float | None = None

    def validate(self, where: str) -> None:
        if self.max_attempts is not None:
            _number(self.max_attempts, where=f"{where}.max_attempts", minimum=1, integer=True)
        for name in ("initial_delay_s", "max_delay_s"):
            value = getattr(self, name)
            if value is not None:
                _number(value, where=f"{where}.{name}")
        if self.multiplier is not None:
            _number(self.multiplier, where=f"{where}.multiplier", minimum=1.0)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


def _kinds_or_codes(values: Iterable[str], where: str) -> frozenset[str]:
    out: set[str] = set()
    for value in values:
        text = canonical_code(str(value))
        if text not in CODES and text not in FailureKind.__members__.values():
            raise ConfigError(f"{text!r} is neither a failure kind nor an ERR_* code", where=where)
        out.add(text)
    return frozenset(out)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How a call is retried. Immutable; build variants with ``derive``."""

    name: str = "custom"
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff: Backoff = Backoff.EXPONENTIAL
    initial_delay_s: float = DEFAULT_INITIAL_DELAY_S
    max_delay_s: float = DEFAULT_MAX_DELAY_S
    multiplier: float = DEFAULT_MULTIPLIER
    jitter: float = DEFAULT_JITTER
    jitter_mode: JitterMode = JitterMode.PROPORTIONAL
    retry_on: frozenset[str] = frozenset()
    never_retry_on: frozenset[str] = frozenset()
    per_kind: Mapping[FailureKind, KindOverride] = dataclasses.field(default_factory=dict)
    # Per error-contract category (``Failure.category``, from the code): consulted before
    # ``per_kind``, which still applies to failures whose category has no entry.
    per_category: Mapping[ErrorCategory, KindOverride] = dataclasses.field(default_factory=dict)
    max_retry_after_s: float = DEFAULT_MAX_RETRY_AFTER_S
    deadline_s: float | None = None
    seed: int | None = None
    # When the attempts run out, hand the task to a human (escalated) instead of failing it.
    escalate_on_exhaustion: bool = False
    # Each retry after a timeout runs with the attempt timeout × this factor per timeout so
    # far (the engine applies it; 1.0: the same timeout every time).
    timeout_factor: float = 1.0

    def __post_init__(self) -> None:
        name = self.name
        if not isinstance(name, str) or not name:
            raise ConfigError("must be a non-empty string", where="policy name")
        set_ = object.__setattr__
        try:
            set_(self, "backoff", Backoff(self.backoff))
        except ValueError:
            choices = ", ".join(b.value for b in Backoff)
            raise ConfigError(
                f"must be one of {choices}, got {self.backoff!r}", where=_where(name, "backoff")
            ) from None
        try:
            set_(self, "jitter_mode", JitterMode(self.jitter_mode))
        except ValueError:
            choices = ", ".join(j.value for j in JitterMode)
            raise ConfigError(
                f"must be one of {choices}, got {self.jitter_mode!r}",
                where=_where(name, "jitter_mode"),
            ) from None
        _number(self.max_attempts, where=_where(name, "max_attempts"), minimum=1, integer=True)
        _number(self.initial_delay_s, where=_where(name, "initial_delay_s"))
        _number(self.max_delay_s, where=_where(name, "max_delay_s"))
        if self.max_delay_s < self.initial_delay_s:
            raise ConfigError(
                f"must be >= initial_delay_s ({self.initial_delay_s:g}), got {self.max_delay_s:g}",
                where=_where(name, "max_delay_s"),
            )
        _number(self.multiplier, where=_where(name, "multiplier"), minimum=1.0)
        _number(self.jitter, where=_where(name, "jitter"))
        if self.jitter > 1.0:
            raise ConfigError(
                f"is a fraction in [0, 1], got {self.jitter!r}", where=_where(name, "jitter")
            )
        _number(self.max_retry_after_s, where=_where(name, "max_retry_after_s"))
        if self.deadline_s is not None:
            _number(self.deadline_s, where=_where(name, "deadline_s"))
        if self.seed is not None and (
            isinstance(self.seed, bool) or not isinstance(self.seed, int)
        ):
            raise ConfigError(f"must be an integer, got {self.seed!r}", where=_where(name, "seed"))
        _number(self.timeout_factor, where=_where(name, "timeout_factor"), minimum=1.0)
        if not isinstance(self.escalate_on_exhaustion, bool):
            raise ConfigError(
                f"must be true or false, got {self.escalate_on_exhaustion!r}",
                where=_where(name, "escalate_on_exhaustion"),
            )
        set_(self, "retry_on", _kinds_or_codes(self.retry_on, _where(name, "retry_on")))
        set_(
            self,
            "never_retry_on",
            _kinds_or_codes(self.never_retry_on, _where(name, "never_retry_on")),
        )
        set_(self, "per_kind", self._checked_per_kind())
        set_(self, "per_category", self._checked_per_category())

    def _checked_per_kind(self) -> dict[FailureKind, KindOverride]:
        out: dict[FailureKind, KindOverride] = {}
        for key, value in dict(self.per_kind).items():
            where = _where(self.name, f"per_kind.{key}")
            try:
                kind = FailureKind(key)
            except ValueError:
                raise ConfigError(f"{key!r} is not a failure kind", where=where) from None
            override = value if isinstance(value, KindOverride) else _override_from(value, where)
            override.validate(where)
            out[kind] = override
        return out

    def _checked_per_category(self) -> dict[ErrorCategory, KindOverride]:
        out: dict[ErrorCategory, KindOverride] = {}
        if not isinstance(self.per_category, Mapping):
            raise ConfigError("must be a mapping", where=_where(self.name, "per_category"))
        for key, value in self.per_category.items():
            where = _where(self.name, f"per_category.{key}")
            try:
                category = ErrorCategory(key)
            except ValueError:
                raise ConfigError(f"{key!r} is not an error category", where=where) from None
            override = value if isinstance(value, KindOverride) else _override_from(value, where)
            override.validate(where)
            out[category] = override
        return out

    def override_for(self, failure: Failure) -> KindOverride | None:
        """The settings ``failure`` is retried under: its category's, else its kind's."""
        if self.per_category:
            found = self.per_category.get(failure.category)
            if found is not None:
                return found
        return self.per_kind.get(failure.kind) if self.per_kind else None

    def derive(self, **changes: Any) -> RetryPolicy:
        """A new policy: this one with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain data: the inverse of ``from_dict``."""
        return {
            "name": self.name,
            "max_attempts": self.max_attempts,
            "backoff": str(self.backoff),
            "initial_delay_s": self.initial_delay_s,
            "max_delay_s": self.max_delay_s,
            "multiplier": self.multiplier,
            "jitter": self.jitter,
            "jitter_mode": str(self.jitter_mode),
            "retry_on": sorted(self.retry_on),
            "never_retry_on": sorted(self.never_retry_on),
            "per_kind": {str(k): v.to_dict() for k, v in sorted(self.per_kind.items())},
            "per_category": {str(k): v.to_dict() for k, v in sorted(self.per_category.items())},
            "max_retry_after_s": self.max_retry_after_s,
            "deadline_s": self.deadline_s,
            "seed": self.seed,
            "escalate_on_exhaustion": self.escalate_on_exhaustion,
            "timeout_factor": self.timeout_factor,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, name: str | None = None) -> RetryPolicy:
        """A policy from plain data; unknown keys are a ``ConfigError``."""
        policy_name = str(name or data.get("name") or "custom")
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ConfigError(
                f"unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(fields))}",
                where=f"policy {policy_name!r}",
            )
        values = dict(data)
        values["name"] = policy_name
        for key in ("retry_on", "never_retry_on"):
            if key in values:
                raw = values[key]
                if isinstance(raw, str) or not isinstance(raw, Iterable):
                    raise ConfigError("must be a list", where=_where(policy_name, key))
                values[key] = frozenset(str(v) for v in raw)
        if "per_kind" in values and not isinstance(values["per_kind"], Mapping):
            raise ConfigError("must be a mapping", where=_where(policy_name, "per_kind"))
        return cls(**values)


def _override_from(value: object, where: str) -> KindOverride:
    if not isinstance(value, Mapping):
        raise ConfigError("must be a mapping", where=where)
    fields = {f.name for f in dataclasses.fields(KindOverride)}
    unknown = sorted(set(value) - fields)
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(map(str, unknown))}; known: {', '.join(sorted(fields))}",
            where=where,
        )
    return KindOverride(**value)


class GiveUpReason:
    """Why ``decide`` stopped retrying (stable strings, used in events)."""

    NOT_RETRYABLE: Final = "not_retryable"
    ATTEMPTS_EXHAUSTED: Final = "attempts_exhausted"
    RETRY_AFTER_TOO_LONG: Final = "retry_after_exceeds_max"
    DEADLINE: Final = "deadline"
    CANCELLED: Final = "cancelled"


@dataclasses.dataclass(frozen=True, slots=True)
class RetryDecision:
    """``retry`` with ``delay_s``, or give up for ``reason``."""

    retry: bool
    delay_s: float = 0.0
    reason: str | None = None


_CANCELLED: Final = RetryDecision(False, reason=GiveUpReason.CANCELLED)
_NOT_RETRYABLE: Final = RetryDecision(False, reason=GiveUpReason.NOT_RETRYABLE)
_EXHAUSTED: Final = RetryDecision(False, reason=GiveUpReason.ATTEMPTS_EXHAUSTED)


def _retry_allowed(policy: RetryPolicy, failure: Failure) -> bool:
    if not policy.never_retry_on and not policy.retry_on:
        return failure.retryable
    kind, code = str(failure.kind), failure.code
    if kind in policy.never_retry_on or code in policy.never_retry_on:
        return False
    if policy.retry_on:
        return kind in policy.retry_on or code in policy.retry_on
    return failure.retryable


def attempt_limit(
    policy: RetryPolicy, kind: FailureKind, *, override: KindOverride | None = None
) -> int:
    """How many attempts ``policy`` allows for failures of ``kind`` (``override``: the
    failure's own settings, ``policy.override_for(failure)``, when known)."""
    if override is None:
        override = policy.per_kind.get(kind) if policy.per_kind else None
    if override is not None and override.max_attempts is not None:
        return min(policy.max_attempts, override.max_attempts)
    if kind is FailureKind.UNKNOWN:
        return min(policy.max_attempts, UNKNOWN_MAX_ATTEMPTS)
    return policy.max_attempts


def decide(
    policy: RetryPolicy,
    failure: Failure,
    *,
    attempt: int,
    elapsed_s: float,
    previous_delay_s: float | None,
    draw: float,
) -> RetryDecision:
    """What to do after attempt number ``attempt`` (from 1) failed with ``failure``."""
    delay, reason = decide_delay(
        policy, failure, attempt, elapsed_s, previous_delay_s, draw, fixed_delays(policy)
    )
    if reason is None:
        return RetryDecision(True, delay_s=delay)
    if delay == 0.0:
        return _GIVE_UPS.get(reason) or RetryDecision(False, reason=reason)
    return RetryDecision(False, delay_s=delay, reason=reason)


_GIVE_UPS: Final = {d.reason: d for d in (_CANCELLED, _NOT_RETRYABLE, _EXHAUSTED)}


# Enum members read as module constants: a member looked up on its class costs more than
# the rest of a decision's comparisons together.
_KIND_CANCELLED: Final = FailureKind.CANCELLED
_KIND_UNKNOWN: Final = FailureKind.UNKNOWN
_DECORRELATED: Final = JitterMode.DECORRELATED


def decide_delay(  # noqa: PLR0917 - the drivers' hot path: positional is cheapest
    policy: RetryPolicy,
    failure: Failure,
    attempt: int,
    elapsed_s: float,
    previous_delay_s: float | None,
    draw: float,
    fixed: tuple[float, ...] | None,
) -> tuple[float, str | None]:
    """``decide`` without the decision object, for the drivers' hot path: the delay, and
    ``None`` to retry or the ``GiveUpReason``. ``fixed`` is ``fixed_delays(policy)``."""
    kind = failure.kind
    if kind is _KIND_CANCELLED:
        return 0.0, GiveUpReason.CANCELLED
    if policy.never_retry_on or policy.retry_on:
        allowed = _retry_allowed(policy, failure)
    else:
        allowed = CODES[failure.code].retryable  # ``failure.retryable``, without the call
    if not allowed:
        return 0.0, GiveUpReason.NOT_RETRYABLE
    override = policy.override_for(failure) if policy.per_kind or policy.per_category else None
    if override is not None or kind is _KIND_UNKNOWN:
        limit = attempt_limit(policy, kind, override=override)
    else:
        limit = policy.max_attempts
    if attempt >= limit:
        return 0.0, GiveUpReason.ATTEMPTS_EXHAUSTED
    if override is None and fixed is not None and attempt <= len(fixed):
        delay = fixed[attempt - 1]
    elif (
        override is None
        and policy.jitter_mode is not _DECORRELATED
        and attempt <= len(base := base_delays(policy))
    ):
        delay = jittered(
            policy.jitter_mode,
            base[attempt - 1],
            attempt,
            policy.jitter,
            max(policy.max_delay_s, policy.initial_delay_s),
            draw,
            policy.seed,
        )
    else:
        initial = policy.initial_delay_s
        maximum = policy.max_delay_s
        multiplier = policy.multiplier
        if override is not None:
            initial = initial if override.initial_delay_s is None else override.initial_delay_s
            maximum = maximum if override.max_delay_s is None else override.max_delay_s
            multiplier = multiplier if override.multiplier is None else override.multiplier
        delay = next_delay(
            policy.backoff,
            attempt,
            initial_s=initial,
            multiplier=multiplier,
            max_s=max(maximum, initial),
            jitter=policy.jitter,
            jitter_mode=policy.jitter_mode,
            previous_s=previous_delay_s,
            draw=draw,
            seed=policy.seed,
        )
    hint = failure.retry_after_s
    if hint is not None and hint > 0.0:
        if hint > policy.max_retry_after_s:
            return hint, GiveUpReason.RETRY_AFTER_TOO_LONG
        delay = max(delay, hint + RETRY_AFTER_MARGIN_S)
    if policy.deadline_s is not None and elapsed_s + delay > policy.deadline_s:
        return delay, GiveUpReason.DEADLINE
    return delay, None
