"""The guard's timing: when the keeper renews, how a waiter polls and when it gives up."""

from __future__ import annotations

import pytest

from backstay.idempotency._schedules import RenewalSchedule, WaitSchedule
from backstay.idempotency.errors import OperationInProgress
from backstay.idempotency.records import Busy
from backstay.idempotency.settings import GuardSettings

BUSY = Busy(operation_id="a:b:c", held_by="w1", generation=1, expires_at=1_000.0)


def test_a_renewal_is_due_a_third_of_the_ttl_after_the_start() -> None:
    schedule = RenewalSchedule(3.0, start=100.0)
    assert schedule.interval_s == pytest.approx(1.0)
    assert schedule.wait_s(100.999) > 0
    assert schedule.wait_s(101.0) == 0.0


def test_the_keeper_looks_at_the_clock_ten_times_per_interval() -> None:
    schedule = RenewalSchedule(3.0, start=0.0)
    assert schedule.wait_s(0.0) == pytest.approx(0.1)


def test_a_renewal_moves_the_next_one_an_interval_later() -> None:
    schedule = RenewalSchedule(3.0, start=0.0)
    schedule.renewed(1.0)
    assert schedule.wait_s(1.999) > 0
    assert schedule.wait_s(2.0) == 0.0


def test_a_failed_renewal_is_retried_sooner_while_the_lease_may_be_valid() -> None:
    schedule = RenewalSchedule(3.0, start=0.0)
    assert schedule.renewal_failed(2.0) is True
    assert schedule.wait_s(2.4) > 0
    assert schedule.wait_s(2.5) == 0.0


def test_a_failed_renewal_after_the_lease_ran_out_means_it_is_lost() -> None:
    schedule = RenewalSchedule(3.0, start=0.0)
    assert schedule.renewal_failed(3.0) is False


def test_a_waiter_that_must_not_wait_raises_at_once() -> None:
    schedule = WaitSchedule(GuardSettings(), timeout_s=60.0, start=0.0)
    with pytest.raises(OperationInProgress) as info:
        schedule.next_delay(BUSY, wait=False, now=0.0, wall_now=990.0)
    assert info.value.retry_after_s == pytest.approx(10.0)
    assert info.value.waited_s == 0.0


def test_a_waiter_polls_with_growing_delays_up_to_the_ceiling() -> None:
    settings = GuardSettings(poll_initial_s=0.1, poll_multiplier=2.0, poll_max_s=0.5)
    schedule = WaitSchedule(settings, timeout_s=60.0, start=0.0)
    delays = [schedule.next_delay(BUSY, wait=True, now=0.0, wall_now=0.0) for _ in range(5)]
    assert delays == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5])


def test_a_waiter_never_sleeps_past_its_timeout() -> None:
    schedule = WaitSchedule(GuardSettings(poll_initial_s=1.0), timeout_s=10.0, start=0.0)
    assert schedule.next_delay(BUSY, wait=True, now=9.75, wall_now=0.0) == pytest.approx(0.25)


def test_a_waiter_raises_once_its_timeout_has_passed() -> None:
    schedule = WaitSchedule(GuardSettings(), timeout_s=10.0, start=0.0)
    with pytest.raises(OperationInProgress) as info:
        schedule.next_delay(BUSY, wait=True, now=10.0, wall_now=2_000.0)
    assert info.value.waited_s == pytest.approx(10.0)
    assert info.value.retry_after_s == 0.0
