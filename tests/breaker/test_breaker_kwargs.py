"""Settings given to ``CircuitBreaker`` as keyword arguments."""

from __future__ import annotations

import pytest

from backstay import CircuitBreaker, ConfigError, Failure
from backstay.breaker import BreakerSettings, CircuitState
from backstay.testing import FakeClock


def test_settings_fields_may_be_given_directly() -> None:
    breaker = CircuitBreaker("p", failure_threshold=1, open_duration_s=5.0, clock=FakeClock())
    assert breaker.settings.failure_threshold == 1
    breaker.acquire().failure(Failure(code="ERR_HTTP_503_UNAVAILABLE"))
    assert breaker.state is CircuitState.OPEN


def test_keyword_settings_change_given_settings() -> None:
    base = BreakerSettings(open_duration_s=7.0)
    breaker = CircuitBreaker("p", settings=base, failure_threshold=2)
    assert (breaker.settings.open_duration_s, breaker.settings.failure_threshold) == (7.0, 2)


def test_an_unknown_keyword_setting_is_named() -> None:
    with pytest.raises(ConfigError, match="unknown setting\\(s\\) threshold"):
        CircuitBreaker("p", threshold=3)


def test_a_bad_keyword_setting_names_its_field() -> None:
    with pytest.raises(ConfigError, match=r"breaker\.open_duration_s"):
        CircuitBreaker("p", open_duration_s=-1)
