"""CircuitBreaker: the permit protocol over a store, with a fake clock."""

from __future__ import annotations

import logging

import pytest
from tests.breaker.support import AUTH, BAD_REQUEST, CANCELLED, QUOTA, RATE_LIMITED, SERVER, Events

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.events import CircuitClosed, CircuitHalfOpened, CircuitOpened
from backstay.breaker.record import CircuitState
from backstay.breaker.settings import BreakerSettings, WindowKind
from backstay.errors import CircuitOpen, ConfigError
from backstay.policy.protocols import CircuitBreakerLike, Permit
from backstay.testing import FakeClock

SETTINGS = BreakerSettings(failure_threshold=2, failure_rate_threshold=None, open_duration_s=10.0)


def _breaker(
    settings: BreakerSettings = SETTINGS, *, events: Events | None = None
) -> tuple[CircuitBreaker, FakeClock]:
    clock = FakeClock()
    return CircuitBreaker("op", settings=settings, clock=clock, on_event=events), clock


def _trip(breaker: CircuitBreaker) -> None:
    while breaker.state is CircuitState.CLOSED:
        breaker.acquire().failure(SERVER)


def test_it_speaks_the_retry_drivers_protocol() -> None:
    breaker, _ = _breaker()
    assert isinstance(breaker, CircuitBreakerLike)
    assert isinstance(breaker.acquire(), Permit)


def test_a_new_breaker_is_closed() -> None:
    assert _breaker()[0].state is CircuitState.CLOSED


def test_callers_in_one_closed_period_share_one_permit() -> None:
    breaker, _ = _breaker()
    assert breaker.acquire() is breaker.acquire()


def test_counted_failures_open_the_circuit() -> None:
    breaker, _ = _breaker()
    _trip(breaker)
    assert breaker.state is CircuitState.OPEN


def test_an_open_circuit_fails_fast_with_the_wait_until_the_next_probe() -> None:
    breaker, clock = _breaker()
    _trip(breaker)
    clock.advance(4.0)
    with pytest.raises(CircuitOpen) as info:
        breaker.acquire()
    assert info.value.name == "op"
    assert info.value.retry_after_s == pytest.approx(6.0)


def test_after_the_open_duration_one_probe_goes_and_the_rest_fail_fast() -> None:
    breaker, clock = _breaker()
    _trip(breaker)
    clock.advance(10.0)
    breaker.acquire()
    assert breaker.state is CircuitState.HALF_OPEN
    with pytest.raises(CircuitOpen) as info:
        breaker.acquire()
    assert info.value.retry_after_s is None


def test_a_successful_probe_closes_the_circuit() -> None:
    breaker, clock = _breaker()
    _trip(breaker)
    clock.advance(10.0)
    breaker.acquire().success()
    assert breaker.state is CircuitState.CLOSED


def test_a_failed_probe_reopens_for_a_full_open_duration() -> None:
    breaker, clock = _breaker()
    _trip(breaker)
    clock.advance(10.0)
    breaker.acquire().failure(SERVER)
    with pytest.raises(CircuitOpen) as info:
        breaker.acquire()
    assert info.value.retry_after_s == pytest.approx(10.0)


def test_a_released_probe_lets_the_next_caller_probe() -> None:
    breaker, clock = _breaker()
    _trip(breaker)
    clock.advance(10.0)
    breaker.acquire().release()
    breaker.acquire().success()
    assert breaker.state is CircuitState.CLOSED


def test_only_the_first_report_on_a_probe_counts() -> None:
    breaker, clock = _breaker(SETTINGS.derive(half_open_max_probes=2))
    _trip(breaker)
    clock.advance(10.0)
    probe = breaker.acquire()
    probe.release()
    probe.release()
    breaker.acquire()
    breaker.acquire()
    with pytest.raises(CircuitOpen):
        breaker.acquire()


def test_the_success_threshold_needs_that_many_probe_successes() -> None:
    breaker, clock = _breaker(SETTINGS.derive(half_open_max_probes=2, success_threshold=2))
    _trip(breaker)
    clock.advance(10.0)
    first, second = breaker.acquire(), breaker.acquire()
    first.success()
    assert breaker.state is CircuitState.HALF_OPEN
    second.success()
    assert breaker.state is CircuitState.CLOSED


@pytest.mark.parametrize("failure", [BAD_REQUEST, RATE_LIMITED, QUOTA, AUTH, CANCELLED])
def test_uncounted_failures_never_open_the_circuit(failure: object) -> None:
    breaker, _ = _breaker()
    for _ in range(10):
        breaker.acquire().failure(failure)  # type: ignore[arg-type]
    assert breaker.state is CircuitState.CLOSED


def test_an_uncounted_failure_does_not_reset_the_consecutive_count() -> None:
    breaker, _ = _breaker()
    breaker.acquire().failure(SERVER)
    breaker.acquire().failure(BAD_REQUEST)
    breaker.acquire().failure(SERVER)
    assert breaker.state is CircuitState.OPEN


def test_an_uncounted_probe_failure_frees_the_probe_slot() -> None:
    breaker, clock = _breaker()
    _trip(breaker)
    clock.advance(10.0)
    breaker.acquire().failure(BAD_REQUEST)
    assert breaker.state is CircuitState.HALF_OPEN
    breaker.acquire().success()
    assert breaker.state is CircuitState.CLOSED


def test_counted_kinds_are_configurable() -> None:
    breaker, _ = _breaker(SETTINGS.derive(counted_kinds=frozenset({"rate_limit"})))
    breaker.acquire().failure(SERVER)
    breaker.acquire().failure(SERVER)
    assert breaker.state is CircuitState.CLOSED
    breaker.acquire().failure(RATE_LIMITED)
    breaker.acquire().failure(RATE_LIMITED)
    assert breaker.state is CircuitState.OPEN


def test_a_release_in_a_closed_circuit_counts_nothing() -> None:
    breaker, _ = _breaker()
    breaker.acquire().failure(SERVER)
    breaker.acquire().release()
    assert breaker.snapshot().consecutive_failures == 1


def test_failures_of_calls_admitted_before_the_circuit_opened_are_ignored() -> None:
    breaker, clock = _breaker()
    late = breaker.acquire()
    _trip(breaker)
    clock.advance(10.0)
    breaker.acquire()  # the probe
    late.failure(SERVER)
    late.success()
    assert breaker.state is CircuitState.HALF_OPEN


def test_reset_closes_and_forgets_the_counts() -> None:
    breaker, _ = _breaker()
    _trip(breaker)
    breaker.reset()
    assert breaker.state is CircuitState.CLOSED
    breaker.acquire().failure(SERVER)
    assert breaker.state is CircuitState.CLOSED


def test_every_transition_emits_one_event() -> None:
    events = Events()
    breaker, clock = _breaker(events=events)
    _trip(breaker)
    clock.advance(10.0)
    breaker.acquire().failure(SERVER)
    clock.advance(10.0)
    breaker.acquire().success()
    _trip(breaker)
    breaker.reset()
    assert events.names == [
        "circuit.opened",
        "circuit.half_opened",
        "circuit.opened",
        "circuit.half_opened",
        "circuit.closed",
        "circuit.opened",
        "circuit.closed",
    ]


def test_the_opened_event_says_why_and_when() -> None:
    events = Events()
    breaker, clock = _breaker(events=events)
    _trip(breaker)
    (opened,) = events.seen
    assert isinstance(opened, CircuitOpened)
    assert (opened.breaker, opened.reason, opened.consecutive_failures) == (
        "op",
        "consecutive_failures",
        2,
    )
    assert opened.from_state is CircuitState.CLOSED
    assert opened.at == clock.now()
    assert opened.open_duration_s == 10.0


def test_the_half_opened_and_closed_events_carry_their_counts() -> None:
    events = Events()
    breaker, clock = _breaker(events=events)
    _trip(breaker)
    clock.advance(10.0)
    breaker.acquire().success()
    half, closed = events.seen[1:]
    assert isinstance(half, CircuitHalfOpened)
    assert half.max_probes == 1
    assert isinstance(closed, CircuitClosed)
    assert (closed.reason, closed.successes) == ("probes_succeeded", 1)


def test_a_failing_event_callback_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def broken(event: object) -> None:
        raise RuntimeError("sink down")

    breaker = CircuitBreaker("op", settings=SETTINGS, clock=FakeClock(), on_event=broken)
    with caplog.at_level(logging.ERROR, logger="backstay.breaker"):
        _trip(breaker)
    assert breaker.state is CircuitState.OPEN
    assert "on_event failed for circuit.opened" in caplog.text


@pytest.mark.parametrize("name", ["", None, 3])
def test_the_name_must_be_a_non_empty_string(name: object) -> None:
    with pytest.raises(ConfigError) as info:
        CircuitBreaker(name)  # type: ignore[arg-type]
    assert info.value.where == "breaker.name"


def test_settings_must_be_breaker_settings() -> None:
    with pytest.raises(ConfigError) as info:
        CircuitBreaker("op", settings={"failure_threshold": 3})  # type: ignore[arg-type]
    assert info.value.where == "breaker.settings"


def test_the_repr_names_the_breaker_and_its_state() -> None:
    assert repr(_breaker()[0]) == "<CircuitBreaker 'op' closed>"


def test_a_time_window_opens_on_the_rate_of_recent_calls_only() -> None:
    settings = BreakerSettings(
        failure_threshold=None, window_kind=WindowKind.TIME, window_s=10.0, minimum_calls=4
    )
    breaker, clock = _breaker(settings)
    for _ in range(3):
        breaker.acquire().failure(SERVER)
    clock.advance(20.0)  # those three have left the window
    for _ in range(3):
        breaker.acquire().success()
    breaker.acquire().failure(SERVER)
    assert breaker.state is CircuitState.CLOSED
    breaker.acquire().failure(SERVER)
    breaker.acquire().failure(SERVER)
    assert breaker.state is CircuitState.OPEN  # 3 of 6 within 10 s
