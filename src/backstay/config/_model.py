"""``BackstayConfig``: the loaded, validated, frozen configuration and where every effective
value came from."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from backstay.breaker.settings import BreakerSettings
from backstay.clock import Clock
from backstay.config._frameworks import FrameworkConfig
from backstay.config._otel import OtelSettings
from backstay.config._source import Source
from backstay.policy.budget import BudgetSettings
from backstay.policy.limit_keys import provider_limits
from backstay.policy.limiters import RateLimiterRegistry
from backstay.policy.ratelimit import RateLimitSettings
from backstay.policy.registry import PolicyRegistry
from backstay.policy.retry import RetryPolicy
from backstay.taxonomy import FailureKind

__all__ = ["BackstayConfig", "EffectiveValue"]


@dataclasses.dataclass(frozen=True, slots=True)
class EffectiveValue:
    """One effective setting: its dotted ``key``, its ``value`` and its ``source``."""

    key: str
    value: Any
    source: Source

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "source": str(self.source),
            "origin": str(self.source.kind),
        }


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BackstayConfig:
    """The effective configuration: file, then ``BACKSTAY__*`` variables, then ``--set``.

    ``registry`` holds every policy (built-ins included), the default and the operation
    mapping. ``circuit_breaker``, ``budget`` and ``rate_limits`` are the validated settings
    of those sections, as read-only mappings of the documented keys (only the keys given).
    ``otel`` is the ``observe.otel`` section, alike. ``store`` is the ``store:`` location
    (``None``: not given) and ``store_unavailable`` its ``unavailable`` (stop or wait).
    ``frameworks`` maps each configured
    agent framework to its ``FrameworkConfig``. ``effective`` maps every dotted key to its
    value and source; ``problems`` lists what a lenient load (``strict=False``) ignored.
    """

    file: pathlib.Path | None
    registry: PolicyRegistry
    circuit_breaker: Mapping[str, Any]
    budget: Mapping[str, Any]
    rate_limits: Mapping[str, Mapping[str, Any]]
    effective: Mapping[str, EffectiveValue]
    otel: Mapping[str, Any] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    problems: tuple[str, ...] = ()
    frameworks: Mapping[str, FrameworkConfig] = dataclasses.field(default_factory=dict)
    store: str | None = None
    store_unavailable: str = "stop"
    # ``observe.metrics_port`` and ``observe.log_level`` (``None``: not given).
    metrics_port: int | None = None
    log_level: str | None = None

    @property
    def default_policy(self) -> str:
        return self.registry.default_policy

    @property
    def operation_policies(self) -> Mapping[str, str]:
        return self.registry.operation_policies

    def policy(self, name: str) -> RetryPolicy:
        """The policy called ``name`` (``ConfigError`` if there is none)."""
        return self.registry.get(name)

    def source_of(self, key: str) -> Source:
        """Where the effective value of ``key`` (``retry.policies.standard.max_attempts``)
        came from; ``KeyError`` for a key that has no value."""
        return self.effective[key].source

    def breaker_settings(self) -> BreakerSettings:
        """The ``circuit_breaker`` section as settings (defaults for keys not given)."""
        values = dict(self.circuit_breaker)
        values.pop("enabled", None)
        if "counted_kinds" in values:
            values["counted_kinds"] = frozenset(FailureKind(k) for k in values["counted_kinds"])
        return BreakerSettings(**values)

    def engine_breaker(self) -> BreakerSettings | None:
        """``breaker_settings()``, or ``None`` (no breakers) when ``enabled`` is false."""
        if self.circuit_breaker.get("enabled", True) is False:
            return None
        return self.breaker_settings()

    def otel_settings(self) -> OtelSettings:
        """The ``observe.otel`` section as settings (defaults for keys not given)."""
        return OtelSettings(**self.otel)

    def budget_settings(self) -> BudgetSettings:
        """The ``budget`` section as settings (defaults for keys not given)."""
        return BudgetSettings(**self.budget)

    def rate_limiters(self, *, clock: Clock | None = None) -> RateLimiterRegistry:
        """A limiter registry with one entry per ``rate_limits`` key (an adapter's name read
        as its provider's: ``backstay.policy.limit_keys``)."""
        return RateLimiterRegistry(provider_limits(self.engine_rate_limits()), clock=clock)

    def engine_rate_limits(self) -> dict[str, RateLimitSettings]:
        """The ``rate_limits`` section as settings by key: what ``backstay batch`` and
        ``resume`` pace their attempts with (``backstay.engine.pacing``)."""
        return {key: RateLimitSettings(**dict(v)) for key, v in self.rate_limits.items()}

    def engine_retry_budget(self) -> BudgetSettings | None:
        """The retry budget of ``backstay batch`` and ``resume``: the ``budget`` section as
        settings, or ``None`` when the section is not given (no retry budget)."""
        return self.budget_settings() if self.budget else None

    def to_dict(self) -> dict[str, Any]:
        """Every effective value with its source, as plain data (``config show --json``)."""
        return {
            "file": None if self.file is None else str(self.file),
            "values": {key: value.to_dict() for key, value in self.effective.items()},
            "problems": list(self.problems),
        }
