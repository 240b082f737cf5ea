"""RateLimiter discovering unknown limits: one probe goes, the others are held until the
provider answers, the probe ends, or its time is up; configured limiters never probe."""

from __future__ import annotations

import pytest

from backstay import ConfigError, Failure
from backstay.policy.protocols import ReservingLimiterLike
from backstay.policy.ratelimit import HOLD_RECHECK_S, RateLimiter, RateLimitSettings
from backstay.testing import FakeClock

# 60 a minute, none left: the next request fits in one second.
EMPTY_60_RPM = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0"}


def _cold(clock: FakeClock, **kw: float) -> RateLimiter:
    return RateLimiter("api", clock=clock, **kw)


def test_a_rate_limiter_is_a_reserving_limiter() -> None:
    assert isinstance(RateLimiter("api"), ReservingLimiterLike)


def test_the_first_reservation_of_a_limiter_that_knows_nothing_is_a_probe_and_goes() -> None:
    limiter = _cold(FakeClock())
    probe = limiter.reservation()
    assert (probe.probe, probe.wait_s, probe.recheck_s) == (True, 0.0, None)


def test_later_reservations_are_held_for_the_probe_timeout_and_rechecked() -> None:
    limiter = _cold(FakeClock(), probe_timeout_s=3.0)
    limiter.reservation()
    held = limiter.reservation()
    assert (held.probe, held.wait_s, held.recheck_s) == (False, 3.0, HOLD_RECHECK_S)
    assert limiter.snapshot().discovering


def test_a_recheck_while_held_never_lengthens_the_wait() -> None:
    clock = FakeClock()
    limiter = _cold(clock, probe_timeout_s=2.0)
    limiter.reservation()
    held = limiter.reservation()
    clock.advance(0.5)
    again = limiter.recheck(held)
    assert again.wait_s == 1.5
    assert again.recheck_s == HOLD_RECHECK_S


def test_the_probes_headers_release_the_held_at_the_pace_they_teach() -> None:
    limiter = _cold(FakeClock())
    probe = limiter.reservation()
    held = limiter.reservation()
    limiter.update_from_headers(EMPTY_60_RPM, answering=probe)
    placed = limiter.recheck(held)
    assert (placed.wait_s, placed.recheck_s) == (1.0, None)
    assert not limiter.snapshot().discovering


def test_headers_without_limits_end_discovery_too() -> None:
    limiter = _cold(FakeClock())
    limiter.reservation()
    held = limiter.reservation()
    limiter.update_from_headers({"content-type": "application/json"})
    assert limiter.recheck(held).wait_s == 0.0


def test_the_end_of_the_probes_attempt_releases_the_held() -> None:
    limiter = _cold(FakeClock())
    probe = limiter.reservation()
    held = limiter.reservation()
    limiter.settle(held)  # not the probe: changes nothing
    assert limiter.recheck(held).recheck_s == HOLD_RECHECK_S
    limiter.settle(probe)
    placed = limiter.recheck(held)
    assert (placed.wait_s, placed.recheck_s) == (0.0, None)


def test_a_failed_probe_releases_the_held() -> None:
    limiter = _cold(FakeClock())
    limiter.reservation()
    held = limiter.reservation()
    limiter.observe(Failure(code="ERR_CONNECTION_RESET"))
    placed = limiter.recheck(held)
    assert (placed.wait_s, placed.recheck_s) == (0.0, None)


def test_a_probe_that_never_answers_releases_the_held_when_its_time_is_up() -> None:
    clock = FakeClock()
    limiter = _cold(clock, probe_timeout_s=2.0)
    limiter.reservation()
    held = limiter.reservation()
    clock.advance(2.0)
    assert limiter.recheck(held).recheck_s is None
    later = limiter.reservation()
    assert (later.probe, later.wait_s, later.recheck_s) == (False, 0.0, None)


def test_discovery_happens_once() -> None:
    limiter = _cold(FakeClock())
    limiter.settle(limiter.reservation())
    following = [limiter.reservation() for _ in range(3)]
    assert [(r.probe, r.recheck_s) for r in following] == [(False, None)] * 3


def test_reserve_never_holds() -> None:
    limiter = _cold(FakeClock())
    limiter.reservation()
    assert [limiter.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "limits",
    [{"requests_per_minute": 60.0}, {"tokens_per_minute": 6000.0}, {"probe_timeout_s": 0.0}],
)
def test_a_configured_limiter_or_one_with_discovery_off_never_probes(
    limits: dict[str, float],
) -> None:
    limiter = _cold(FakeClock(), **limits)
    reservations = [limiter.reservation() for _ in range(3)]
    assert [(r.probe, r.recheck_s) for r in reservations] == [(False, None)] * 3
    assert not limiter.snapshot().discovering


def test_a_held_reservation_is_placed_in_order_of_recheck_behind_the_probes_retry() -> None:
    limiter = _cold(FakeClock())
    probe = limiter.reservation()
    held = [limiter.reservation() for _ in range(3)]
    limiter.update_from_headers(EMPTY_60_RPM, answering=probe)
    assert [limiter.recheck(h).wait_s for h in held] == [1.0, 2.0, 3.0]


def test_a_negative_probe_timeout_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="probe_timeout_s"):
        RateLimitSettings(probe_timeout_s=-1.0)


# -- the learned token ratio --------------------------------------------------------------


def _answer(limiter: RateLimiter, remaining: float) -> None:
    reservation = limiter.reservation(100.0)
    headers = {
        "x-ratelimit-limit-tokens": "60000",
        "x-ratelimit-remaining-tokens": str(remaining),
    }
    limiter.update_from_headers(headers, answering=reservation)


def test_reservations_are_scaled_by_the_ratio_learned_from_the_headers() -> None:
    limiter = RateLimiter("api", tokens_per_minute=60_000, clock=FakeClock())
    for n in range(6):  # each request estimated at 100 tokens is charged 120
        _answer(limiter, 50_000 - 120 * n)
    assert limiter.snapshot().token_ratio == pytest.approx(1.2)
    before = limiter.reservation(100.0).tokens_through
    assert limiter.reservation(100.0).tokens_through - before == pytest.approx(120.0)
