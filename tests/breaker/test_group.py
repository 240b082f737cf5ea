"""BreakerGroup: a call passes only when every breaker admits it."""

from __future__ import annotations

import pytest
from tests.breaker.support import SERVER

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.group import BreakerGroup
from backstay.breaker.record import CircuitState
from backstay.breaker.settings import BreakerSettings
from backstay.errors import CircuitOpen, ConfigError
from backstay.policy.protocols import CircuitBreakerLike
from backstay.testing import FakeClock

SETTINGS = BreakerSettings(failure_threshold=1, failure_rate_threshold=None, open_duration_s=5.0)


def _pair() -> tuple[CircuitBreaker, CircuitBreaker, BreakerGroup]:
    clock = FakeClock()
    outer = CircuitBreaker("*", settings=SETTINGS, clock=clock)
    inner = CircuitBreaker("op", settings=SETTINGS, clock=clock)
    return outer, inner, BreakerGroup((outer, inner))


def test_a_group_is_a_breaker_named_after_its_members() -> None:
    group = _pair()[2]
    assert isinstance(group, CircuitBreakerLike)
    assert group.name == "*+op"


def test_a_report_reaches_every_member() -> None:
    outer, inner, group = _pair()
    group.acquire().failure(SERVER)
    assert (outer.state, inner.state) == (CircuitState.OPEN, CircuitState.OPEN)


def test_a_refusal_releases_the_permits_already_taken() -> None:
    clock = FakeClock()
    first = CircuitBreaker("first", settings=SETTINGS, clock=clock)
    second = CircuitBreaker("second", settings=SETTINGS, clock=clock)
    first.acquire().failure(SERVER)
    clock.advance(5.0)  # first: its one probe is due
    second.acquire().failure(SERVER)  # second: open for 5 s more
    with pytest.raises(CircuitOpen) as info:
        BreakerGroup((first, second)).acquire()
    assert info.value.name == "second"
    first.acquire().success()  # the probe slot came back
    assert first.state is CircuitState.CLOSED


def test_an_empty_group_is_refused() -> None:
    with pytest.raises(ConfigError):
        BreakerGroup(())
