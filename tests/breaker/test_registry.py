"""BreakerRegistry: one breaker per operation key, a global one, and their health."""

from __future__ import annotations

import json

import pytest
from tests.breaker.support import SERVER, Events

from backstay.breaker.record import CircuitState
from backstay.breaker.registry import GLOBAL_NAME, BreakerRegistry
from backstay.breaker.settings import BreakerSettings
from backstay.errors import CircuitOpen, ConfigError
from backstay.testing import FakeClock

SETTINGS = BreakerSettings(failure_threshold=2, failure_rate_threshold=None, open_duration_s=10.0)


def _registry(events: Events | None = None) -> BreakerRegistry:
    return BreakerRegistry(settings=SETTINGS, clock=FakeClock(), on_event=events)


def test_one_key_gets_one_breaker() -> None:
    registry = _registry()
    assert registry.breaker_for(("anthropic", "claude")) is registry.breaker_for("anthropic/claude")
    assert len(registry) == 1


def test_a_tuple_key_names_the_breaker_with_its_parts() -> None:
    assert _registry().breaker_for(("openai", "gpt-5")).name == "openai/gpt-5"


def test_keyed_breakers_share_the_registry_settings() -> None:
    assert _registry().breaker_for("op").settings is SETTINGS


def test_keys_fail_independently() -> None:
    registry = _registry()
    sick, well = registry.breaker_for("sick"), registry.breaker_for("well")
    sick.acquire().failure(SERVER)
    sick.acquire().failure(SERVER)
    assert (sick.state, well.state) == (CircuitState.OPEN, CircuitState.CLOSED)


@pytest.mark.parametrize("key", ["", (), ("a", ""), ("a", 3), 7, GLOBAL_NAME])
def test_a_bad_key_is_a_config_error(key: object) -> None:
    with pytest.raises(ConfigError) as info:
        _registry().breaker_for(key)  # type: ignore[arg-type]
    assert info.value.where == "key"


def test_the_global_breaker_may_have_settings_of_its_own() -> None:
    own = SETTINGS.derive(failure_threshold=50)
    registry = BreakerRegistry(settings=SETTINGS, global_settings=own)
    assert registry.global_breaker.settings is own
    assert registry.global_breaker.name == GLOBAL_NAME


def test_a_guard_fails_fast_when_the_global_breaker_is_open() -> None:
    registry = _registry()
    registry.global_breaker.acquire().failure(SERVER)
    registry.global_breaker.acquire().failure(SERVER)
    with pytest.raises(CircuitOpen) as info:
        registry.guard("op").acquire()
    assert info.value.name == GLOBAL_NAME


def test_a_guard_reports_to_the_global_and_the_keyed_breaker() -> None:
    registry = _registry()
    guard = registry.guard(("p", "m"))
    guard.acquire().failure(SERVER)
    guard.acquire().failure(SERVER)
    assert registry.global_breaker.state is CircuitState.OPEN
    assert registry.breaker_for(("p", "m")).state is CircuitState.OPEN


def test_a_guard_is_made_once_per_key() -> None:
    registry = _registry()
    assert registry.guard("op") is registry.guard("op")


def test_health_lists_every_breaker_with_its_state_and_counts() -> None:
    registry = _registry()
    registry.breaker_for("b").acquire().failure(SERVER)
    registry.breaker_for("a").acquire().success()
    health = registry.health()
    assert list(health) == [GLOBAL_NAME, "a", "b"]
    assert health["b"].consecutive_failures == 1
    assert health["a"].state is CircuitState.CLOSED
    assert json.dumps({k: v.to_dict() for k, v in health.items()})


def test_reset_closes_every_breaker() -> None:
    registry = _registry()
    for name in ("a", "b"):
        registry.breaker_for(name).acquire().failure(SERVER)
        registry.breaker_for(name).acquire().failure(SERVER)
    registry.reset()
    assert {s.state for s in registry.health().values()} == {CircuitState.CLOSED}


def test_events_of_every_breaker_reach_the_registry_callback() -> None:
    events = Events()
    registry = _registry(events)
    for name in ("a", "b"):
        registry.breaker_for(name).acquire().failure(SERVER)
        registry.breaker_for(name).acquire().failure(SERVER)
    assert [getattr(e, "breaker", None) for e in events.seen] == ["a", "b"]
