"""RateLimiterRegistry: one limiter per provider and model, settings by the most specific key."""

from __future__ import annotations

import threading

import pytest

from backstay import ConfigError
from backstay.policy.limiters import RateLimiterRegistry
from backstay.policy.ratelimit import RateLimiter, RateLimitSettings
from backstay.testing import FakeClock

PROVIDER = RateLimitSettings(requests_per_minute=50)
MODEL = RateLimitSettings(requests_per_minute=5)
DEFAULT = RateLimitSettings(requests_per_minute=500)


def _registry() -> RateLimiterRegistry:
    return RateLimiterRegistry(
        {"anthropic": PROVIDER, "anthropic/claude-opus": MODEL},
        default=DEFAULT,
        clock=FakeClock(),
    )


def test_the_same_provider_and_model_give_the_same_limiter() -> None:
    registry = _registry()
    assert registry.limiter_for("openai", "gpt-5") is registry.limiter_for("openai", "gpt-5")


def test_a_model_entry_wins_over_its_provider_entry() -> None:
    assert _registry().limiter_for("anthropic", "claude-opus").settings == MODEL


def test_a_model_without_an_entry_takes_its_providers_entry() -> None:
    assert _registry().limiter_for("anthropic", "claude-haiku").settings == PROVIDER


def test_a_provider_without_an_entry_takes_the_default() -> None:
    assert _registry().limiter_for("openai", "gpt-5").settings == DEFAULT


def test_models_of_one_provider_do_not_share_a_limiter() -> None:
    registry = _registry()
    assert registry.limiter_for("anthropic", "a") is not registry.limiter_for("anthropic", "b")


def test_a_limiter_is_named_for_its_provider_and_model() -> None:
    registry = _registry()
    names = (registry.limiter_for("anthropic", "claude-opus").name, registry.limiter_for("x").name)
    assert names == ("anthropic/claude-opus", "x")


def test_limiters_share_the_registrys_clock() -> None:
    clock = FakeClock()
    registry = RateLimiterRegistry(
        default=RateLimitSettings(requests_per_minute=60, burst_s=1.0), clock=clock
    )
    limiter = registry.limiter_for("openai")
    limiter.reserve()
    clock.advance(1.0)
    assert limiter.reserve() == 0.0


def test_the_registry_lists_the_limiters_it_made() -> None:
    registry = _registry()
    registry.limiter_for("anthropic", "claude-opus")
    registry.limiter_for("openai")
    assert sorted(registry.limiters()) == ["anthropic/claude-opus", "openai"]


def test_threads_asking_at_once_get_one_limiter() -> None:
    registry = _registry()
    start = threading.Barrier(8)
    seen: list[RateLimiter] = []
    lock = threading.Lock()

    def ask() -> None:
        start.wait(timeout=10)
        limiter = registry.limiter_for("gemini", "flash")
        with lock:
            seen.append(limiter)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert len({id(limiter) for limiter in seen}) == 1


@pytest.mark.parametrize("key", ["", "/model", "provider/"])
def test_a_bad_key_is_refused(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        RateLimiterRegistry({key: PROVIDER})
    assert info.value.where == "RateLimiterRegistry.limits key"


def test_an_entry_must_be_rate_limit_settings() -> None:
    with pytest.raises(ConfigError) as info:
        RateLimiterRegistry({"openai": {"requests_per_minute": 60}})  # type: ignore[dict-item]
    assert info.value.where == "RateLimiterRegistry.limits['openai']"


def test_the_default_must_be_rate_limit_settings() -> None:
    with pytest.raises(ConfigError) as info:
        RateLimiterRegistry(default=None)  # type: ignore[arg-type]
    assert info.value.where == "RateLimiterRegistry.default"


@pytest.mark.parametrize(
    ("provider", "model", "where"), [("", None, "provider"), ("a", "", "model")]
)
def test_a_lookup_needs_a_provider_and_a_model_name(
    provider: str, model: str | None, where: str
) -> None:
    with pytest.raises(ConfigError) as info:
        _registry().limiter_for(provider, model)
    assert info.value.where == where
