"""``TaskGates``: the circuit breakers and rate limiters of an engine adapter's model calls.

A ``RuntimeTaskAdapter`` keeps one ``TaskGates`` for its lifetime, so the tasks of a batch
share them: one breaker per ``(adapter name, model)`` (a model that keeps failing opens
its circuit for every later task) and one rate limiter per ``(adapter name, model)`` (a
429's wait holds back the other tasks' calls too). A task's ``config.breaker`` and
``config.rate_limit`` turn them off (``false``) or tune them (a mapping of
``BreakerSettings`` / ``RateLimitSettings`` fields); tasks with the same settings share
the same breaker and limiter.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.registry import BreakerRegistry
from backstay.breaker.settings import BreakerSettings
from backstay.errors import ConfigError
from backstay.policy.limiters import RateLimiterRegistry
from backstay.policy.ratelimit import RateLimiter, RateLimitSettings
from backstay.taxonomy import FailureKind

__all__ = ["TaskGates", "breaker_settings", "rate_limit_settings"]

_NO_MODEL: Final = "default"  # a task that names no model: the framework's own default


def _section(value: Any, where: str) -> Mapping[str, Any] | None:
    """``None`` for ``false``, the mapping for ``true`` (empty) or a mapping; else an error."""
    if value is None or value is True:
        return {}
    if value is False:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"must be true, false or a mapping, got {value!r}", where=where)
    return value


def _fields(build: Any, values: Mapping[str, Any], where: str) -> Any:
    try:
        return build(**dict(values))
    except TypeError as err:
        raise ConfigError(f"unknown setting: {err}", where=where) from None


def breaker_settings(value: Any) -> BreakerSettings | None:
    """The breaker settings ``config.breaker`` asks for (``None``: no breaker)."""
    section = _section(value, "config.breaker")
    if section is None:
        return None
    values = dict(section)
    if "counted_kinds" in values:
        kinds = values["counted_kinds"]
        if isinstance(kinds, str) or not isinstance(kinds, list | tuple | set | frozenset):
            raise ConfigError(
                f"must be a list of failure kinds, got {kinds!r}",
                where="config.breaker.counted_kinds",
            )
        try:
            values["counted_kinds"] = frozenset(FailureKind(k) for k in kinds)
        except ValueError as err:
            raise ConfigError(str(err), where="config.breaker.counted_kinds") from None
    settings: BreakerSettings = _fields(BreakerSettings, values, "config.breaker")
    return settings


def rate_limit_settings(value: Any) -> RateLimitSettings | None:
    """The limiter settings ``config.rate_limit`` asks for (``None``: no rate limiter)."""
    section = _section(value, "config.rate_limit")
    if section is None:
        return None
    settings: RateLimitSettings = _fields(RateLimitSettings, section, "config.rate_limit")
    return settings


class TaskGates:
    """Breakers and limiters by settings, then by ``(name, model)``. Thread-safe."""

    __slots__ = ("_breakers", "_limiters", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._breakers: dict[BreakerSettings, BreakerRegistry] = {}
        self._limiters: dict[RateLimitSettings, RateLimiterRegistry] = {}

    def breaker(self, config: Mapping[str, Any], name: str, model: str) -> CircuitBreaker | None:
        """The breaker of ``(name, model)`` under the task's settings, or ``None`` (off)."""
        settings = breaker_settings(config.get("breaker"))
        if settings is None:
            return None
        with self._lock:
            registry = self._breakers.get(settings)
            if registry is None:
                registry = self._breakers[settings] = BreakerRegistry(settings=settings)
        return registry.breaker_for((name, model or _NO_MODEL))

    def limiter(self, config: Mapping[str, Any], name: str, model: str) -> RateLimiter | None:
        """The rate limiter of ``(name, model)`` under the task's settings, or ``None``."""
        settings = rate_limit_settings(config.get("rate_limit"))
        if settings is None:
            return None
        with self._lock:
            registry = self._limiters.get(settings)
            if registry is None:
                registry = self._limiters[settings] = RateLimiterRegistry(default=settings)
        return registry.limiter_for(name, model or _NO_MODEL)
