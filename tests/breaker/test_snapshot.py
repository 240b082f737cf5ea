"""BreakerSnapshot: the queryable view of one breaker."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from tests.breaker.support import SERVER

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.record import CircuitState
from backstay.breaker.settings import BreakerSettings
from backstay.testing import FakeClock

SETTINGS = BreakerSettings(failure_threshold=3, window_calls=10, minimum_calls=10)


def _breaker() -> tuple[CircuitBreaker, FakeClock]:
    clock = FakeClock()
    return CircuitBreaker("op", settings=SETTINGS, clock=clock), clock


def test_a_closed_snapshot_shows_the_counts() -> None:
    breaker, _ = _breaker()
    breaker.acquire().success()
    breaker.acquire().failure(SERVER)
    snap = breaker.snapshot()
    assert snap.state is CircuitState.CLOSED
    assert (snap.consecutive_failures, snap.window_calls, snap.window_failures) == (1, 2, 1)
    assert snap.failure_rate == 0.5
    assert (snap.opened_at, snap.next_probe_at, snap.retry_after_s) == (None, None, None)


def test_an_open_snapshot_shows_when_it_opened_and_when_it_probes() -> None:
    breaker, clock = _breaker()
    for _ in range(3):
        breaker.acquire().failure(SERVER)
    opened = clock.now()
    clock.advance(5.0)
    snap = breaker.snapshot()
    assert snap.state is CircuitState.OPEN
    assert snap.opened_at == opened
    assert snap.next_probe_at == opened + dt.timedelta(seconds=SETTINGS.open_duration_s)
    assert snap.retry_after_s == pytest.approx(SETTINGS.open_duration_s - 5.0)


def test_a_half_open_snapshot_shows_the_probes_in_flight() -> None:
    breaker, clock = _breaker()
    for _ in range(3):
        breaker.acquire().failure(SERVER)
    clock.advance(SETTINGS.open_duration_s)
    breaker.acquire()
    snap = breaker.snapshot()
    assert (snap.state, snap.probes_in_flight, snap.retry_after_s) == (
        CircuitState.HALF_OPEN,
        1,
        None,
    )


def test_an_empty_window_has_no_failure_rate() -> None:
    assert _breaker()[0].snapshot().failure_rate is None


def test_the_plain_form_is_json() -> None:
    breaker, _ = _breaker()
    for _ in range(3):
        breaker.acquire().failure(SERVER)
    data = json.loads(json.dumps(breaker.snapshot().to_dict()))
    assert data["state"] == "open"
    assert data["opened_at"] == "2026-01-01T00:00:00+00:00"
