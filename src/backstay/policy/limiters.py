"""``RateLimiterRegistry``: one ``RateLimiter`` per provider and model, made on first use.

Providers publish limits per model, and their rate-limit headers describe the model that
answered, so each ``(provider, model)`` pair gets a limiter of its own. Its settings are
the most specific entry of ``limits``: ``"provider/model"``, then ``"provider"``, then
``default``. A ``"provider"`` entry is therefore the limit *each* of that provider's
models gets, not a pool they share. ``model=None`` names the provider's own limiter, for
callers that do not know the model.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from backstay._checks import check_name
from backstay.clock import Clock
from backstay.errors import ConfigError
from backstay.policy.ratelimit import DEFAULT_RATE_LIMIT_SETTINGS, RateLimiter, RateLimitSettings

__all__ = ["RateLimiterRegistry"]


def _key(provider: str, model: str | None) -> str:
    return provider if model is None else f"{provider}/{model}"


class RateLimiterRegistry:
    """Keyed lookup of shared rate limiters. Thread-safe; the same key gives the same object."""

    __slots__ = ("_clock", "_limiters", "_lock", "default", "limits")

    def __init__(
        self,
        limits: Mapping[str, RateLimitSettings] | None = None,
        *,
        default: RateLimitSettings = DEFAULT_RATE_LIMIT_SETTINGS,
        clock: Clock | None = None,
    ) -> None:
        checked: dict[str, RateLimitSettings] = {}
        for key, settings in dict(limits or {}).items():
            check_name(key, where="RateLimiterRegistry.limits key")
            if key.startswith("/") or key.endswith("/"):
                raise ConfigError(
                    f"must be 'provider' or 'provider/model', got {key!r}",
                    where="RateLimiterRegistry.limits key",
                )
            if not isinstance(settings, RateLimitSettings):
                raise ConfigError(
                    f"must be a RateLimitSettings, got {type(settings).__name__}",
                    where=f"RateLimiterRegistry.limits[{key!r}]",
                )
            checked[key] = settings
        if not isinstance(default, RateLimitSettings):
            raise ConfigError(
                f"must be a RateLimitSettings, got {type(default).__name__}",
                where="RateLimiterRegistry.default",
            )
        self.limits: Mapping[str, RateLimitSettings] = checked
        self.default = default
        self._clock = clock
        self._lock = threading.Lock()
        self._limiters: dict[str, RateLimiter] = {}

    def settings_for(self, provider: str, model: str | None = None) -> RateLimitSettings:
        """The settings a ``(provider, model)`` limiter gets: the most specific entry."""
        check_name(provider, where="provider")
        if model is not None:
            check_name(model, where="model")
            found = self.limits.get(_key(provider, model))
            if found is not None:
                return found
        return self.limits.get(provider, self.default)

    def limiter_for(self, provider: str, model: str | None = None) -> RateLimiter:
        """The limiter of ``provider`` and ``model``, named ``"provider/model"`` (or
        ``"provider"``); made from ``settings_for`` on first use, then always the same."""
        key = _key(provider, model)
        with self._lock:
            limiter = self._limiters.get(key)
            if limiter is None:
                settings = self.settings_for(provider, model)
                limiter = RateLimiter.from_settings(key, settings, clock=self._clock)
                self._limiters[key] = limiter
            return limiter

    def limiters(self) -> dict[str, RateLimiter]:
        """Every limiter made so far, by name."""
        with self._lock:
            return dict(self._limiters)
