"""The pure state machine: every transition, decided from (settings, record, now)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from backstay.breaker.record import CLOSED_RECORD, BreakerRecord, CircuitState
from backstay.breaker.settings import BreakerSettings, WindowKind
from backstay.breaker.state import (
    Admission,
    Step,
    TransitionReason,
    acquire,
    fail,
    next_probe_at,
    quiet_success,
    reclaim,
    release,
    reset,
    succeed,
    totals,
)

CONSECUTIVE = BreakerSettings(failure_threshold=3, failure_rate_threshold=None)
RATE = BreakerSettings(
    failure_threshold=None, failure_rate_threshold=0.5, window_calls=10, minimum_calls=4
)


def _fail(s: BreakerSettings, r: BreakerRecord, now: float = 0.0, *, probe: bool = False) -> Step:
    return fail(s, r, epoch=r.epoch, probe=probe, now=now)


def _ok(s: BreakerSettings, r: BreakerRecord, now: float = 0.0, *, probe: bool = False) -> Step:
    return succeed(s, r, epoch=r.epoch, probe=probe, now=now)


def _opened(s: BreakerSettings, at: float = 0.0) -> BreakerRecord:
    record = CLOSED_RECORD
    while record.state is CircuitState.CLOSED:
        record = _fail(s, record, at).record
    return record


def test_closed_admits_without_changing_the_record() -> None:
    step = acquire(CONSECUTIVE, CLOSED_RECORD, 0.0)
    assert step.admission is Admission.ADMIT
    assert step.record is CLOSED_RECORD


def test_consecutive_failures_open_at_the_threshold() -> None:
    r = _fail(CONSECUTIVE, _fail(CONSECUTIVE, CLOSED_RECORD).record).record
    assert r.state is CircuitState.CLOSED
    step = _fail(CONSECUTIVE, r, 7.0)
    assert step.record.state is CircuitState.OPEN
    assert step.record.opened_at == 7.0
    assert step.transition is not None
    assert step.transition.reason is TransitionReason.CONSECUTIVE_FAILURES


def test_a_success_resets_the_consecutive_count() -> None:
    r = _fail(CONSECUTIVE, _fail(CONSECUTIVE, CLOSED_RECORD).record).record
    r = _ok(CONSECUTIVE, r).record
    assert _fail(CONSECUTIVE, r).record.consecutive == 1


def test_the_rate_trips_only_once_the_window_holds_minimum_calls() -> None:
    r = _fail(RATE, _fail(RATE, CLOSED_RECORD).record).record
    r = _fail(RATE, r).record
    assert r.state is CircuitState.CLOSED  # 3 of 3 failed, but 3 < minimum_calls
    step = _fail(RATE, r)
    assert step.record.state is CircuitState.OPEN
    assert step.transition is not None
    assert step.transition.reason is TransitionReason.FAILURE_RATE
    assert (step.transition.calls, step.transition.failures) == (4, 4)


def test_the_rate_trips_at_exactly_the_threshold() -> None:
    r = _fail(RATE, _ok(RATE, _ok(RATE, CLOSED_RECORD).record).record).record
    assert r.state is CircuitState.CLOSED  # 1 of 3, and 3 < minimum_calls
    assert _fail(RATE, r).record.state is CircuitState.OPEN  # 2 of 4 = 0.5


def test_the_rate_stays_closed_below_the_threshold() -> None:
    r = CLOSED_RECORD
    for _ in range(10):
        r = _ok(RATE, _ok(RATE, r).record).record
        r = _fail(RATE, r).record
    assert r.state is CircuitState.CLOSED
    assert totals(RATE, r, 0.0) == (10, r.window_bits.bit_count())


def test_a_time_window_forgets_old_failures() -> None:
    s = RATE.derive(window_kind=WindowKind.TIME, window_s=10.0)
    r = CLOSED_RECORD
    for _ in range(3):
        r = _fail(s, r, 100.0).record
    r = _ok(s, r, 115.0).record
    assert _fail(s, r, 115.0).record.state is CircuitState.CLOSED  # 1 of 2 calls, < minimum


def test_a_time_window_trips_on_the_rate_within_the_window() -> None:
    s = RATE.derive(window_kind=WindowKind.TIME, window_s=10.0)
    r = _ok(s, _fail(s, _fail(s, CLOSED_RECORD, 100.0).record, 101.0).record, 102.0).record
    assert _fail(s, r, 103.0).record.state is CircuitState.OPEN  # 3 of 4 in 10 s


def test_open_rejects_with_the_time_until_the_next_probe() -> None:
    r = _opened(CONSECUTIVE, at=100.0)
    step = acquire(CONSECUTIVE, r, 110.0)
    assert step.admission is Admission.REJECT
    assert step.retry_after_s == CONSECUTIVE.open_duration_s - 10.0
    assert step.record is r


def test_after_the_open_duration_the_first_caller_probes() -> None:
    r = _opened(CONSECUTIVE, at=100.0)
    step = acquire(CONSECUTIVE, r, 100.0 + CONSECUTIVE.open_duration_s)
    assert step.admission is Admission.PROBE
    assert step.record.state is CircuitState.HALF_OPEN
    assert step.record.epoch == r.epoch + 1
    assert step.transition is not None
    assert step.transition.reason is TransitionReason.OPEN_DURATION_ELAPSED


def _half_open(s: BreakerSettings) -> BreakerRecord:
    return acquire(s, _opened(s), s.open_duration_s).record


def test_half_open_admits_no_more_than_the_probe_limit() -> None:
    s = CONSECUTIVE.derive(half_open_max_probes=3)
    r = _half_open(s)
    admissions = []
    for _ in range(5):
        step = acquire(s, r, s.open_duration_s)
        admissions.append(step.admission)
        r = step.record
    assert admissions == [Admission.PROBE] * 2 + [Admission.REJECT] * 3
    assert r.probes == 3


def test_half_open_rejects_without_a_wait_when_every_probe_is_out() -> None:
    r = _half_open(CONSECUTIVE)
    assert acquire(CONSECUTIVE, r, CONSECUTIVE.open_duration_s).retry_after_s is None


def test_a_probe_success_closes() -> None:
    step = _ok(CONSECUTIVE, _half_open(CONSECUTIVE), probe=True)
    assert step.record.state is CircuitState.CLOSED
    assert step.transition is not None
    assert step.transition.reason is TransitionReason.PROBES_SUCCEEDED


def test_closing_waits_for_the_success_threshold() -> None:
    s = CONSECUTIVE.derive(half_open_max_probes=2, success_threshold=2)
    r = acquire(s, _half_open(s), s.open_duration_s).record
    r = _ok(s, r, probe=True).record
    assert r.state is CircuitState.HALF_OPEN
    assert _ok(s, r, probe=True).record.state is CircuitState.CLOSED


def test_a_probe_failure_reopens() -> None:
    step = _fail(CONSECUTIVE, _half_open(CONSECUTIVE), 50.0, probe=True)
    assert step.record.state is CircuitState.OPEN
    assert step.record.opened_at == 50.0
    assert step.transition is not None
    assert step.transition.reason is TransitionReason.PROBE_FAILED


def test_a_released_probe_frees_its_slot_and_counts_nothing() -> None:
    r = _half_open(CONSECUTIVE)
    r = release(r, epoch=r.epoch, probe=True).record
    assert (r.state, r.probes, r.probe_successes) == (CircuitState.HALF_OPEN, 0, 0)
    assert acquire(CONSECUTIVE, r, CONSECUTIVE.open_duration_s).admission is Admission.PROBE


def test_a_probe_taken_by_a_named_holder_lists_it_until_it_reports() -> None:
    s = CONSECUTIVE.derive(half_open_max_probes=3, success_threshold=3)
    r = acquire(s, _opened(s), s.open_duration_s, "a").record
    r = acquire(s, r, s.open_duration_s, "b").record
    assert (r.probes, r.probe_holders) == (2, ("a", "b"))
    r = succeed(s, r, epoch=r.epoch, probe=True, now=0.0, holder="a").record
    assert (r.probes, r.probe_holders) == (2, ("b",))
    r = release(r, epoch=r.epoch, probe=True, holder="b").record
    assert (r.probes, r.probe_holders) == (1, ())


def test_reclaiming_a_gone_holders_probe_frees_its_slot_for_the_next_caller() -> None:
    r = acquire(CONSECUTIVE, _opened(CONSECUTIVE), CONSECUTIVE.open_duration_s, "dead").record
    now = CONSECUTIVE.open_duration_s + 1.0  # long before probe_timeout_s
    assert acquire(CONSECUTIVE, r, now, "next").admission is Admission.REJECT
    back = reclaim(r, {"dead"})
    assert (back.record.probes, back.record.probe_holders, back.transition) == (0, (), None)
    assert back.record.epoch == r.epoch
    step = acquire(CONSECUTIVE, back.record, now, "next")
    assert (step.admission, step.record.probe_holders) == (Admission.PROBE, ("next",))


def test_reclaiming_holders_without_a_probe_out_changes_nothing() -> None:
    half_open = acquire(CONSECUTIVE, _opened(CONSECUTIVE), CONSECUTIVE.open_duration_s, "a")
    assert reclaim(half_open.record, {"b"}).record is half_open.record
    opened = _opened(CONSECUTIVE)
    assert reclaim(opened, {"a"}).record is opened


def test_reports_from_an_earlier_epoch_change_nothing() -> None:
    r = _half_open(CONSECUTIVE)
    stale = r.epoch - 1
    assert fail(CONSECUTIVE, r, epoch=stale, probe=False, now=0.0).record is r
    assert succeed(CONSECUTIVE, r, epoch=stale, probe=True, now=0.0).record is r
    assert release(r, epoch=stale, probe=True).record is r


def test_probes_that_never_report_expire_into_a_new_round() -> None:
    r = _half_open(CONSECUTIVE)
    later = CONSECUTIVE.open_duration_s + CONSECUTIVE.probe_timeout_s
    step = acquire(CONSECUTIVE, r, later)
    assert step.admission is Admission.PROBE
    assert step.record.epoch == r.epoch + 1
    assert step.transition is not None
    assert step.transition.reason is TransitionReason.PROBES_EXPIRED


def test_a_wall_clock_stepping_back_never_extends_the_open_period() -> None:
    r = _opened(CONSECUTIVE, at=1000.0)
    step = acquire(CONSECUTIVE, r, 400.0)
    assert step.retry_after_s == CONSECUTIVE.open_duration_s
    later = acquire(CONSECUTIVE, step.record, 400.0 + CONSECUTIVE.open_duration_s)
    assert later.admission is Admission.PROBE


def test_reset_closes_and_moves_the_epoch() -> None:
    r = _opened(CONSECUTIVE)
    step = reset(r)
    assert step.record.state is CircuitState.CLOSED
    assert step.record.epoch == r.epoch + 1
    assert step.transition is not None
    assert step.transition.reason is TransitionReason.RESET


def test_reset_of_a_closed_circuit_is_no_transition() -> None:
    assert reset(CLOSED_RECORD).transition is None


def test_the_next_probe_time_follows_the_state() -> None:
    r = _opened(CONSECUTIVE, at=10.0)
    assert next_probe_at(CONSECUTIVE, CLOSED_RECORD) is None
    assert next_probe_at(CONSECUTIVE, r) == 10.0 + CONSECUTIVE.open_duration_s
    assert next_probe_at(CONSECUTIVE, _half_open(CONSECUTIVE)) is None


_ops = st.lists(st.sampled_from(["ok", "fail", "acquire", "release", "wait"]), max_size=60)
_settings = st.sampled_from(
    [
        CONSECUTIVE,
        RATE,
        BreakerSettings(),
        BreakerSettings(window_kind=WindowKind.TIME, window_s=5.0, minimum_calls=3),
        CONSECUTIVE.derive(half_open_max_probes=3, success_threshold=2),
    ]
)


def _walk(s: BreakerSettings, ops: list[str]) -> list[tuple[BreakerRecord, float]]:
    """Records seen along a random walk of calls (a probe's epoch is the current one)."""
    now, r, seen = 0.0, CLOSED_RECORD, []
    for op in ops:
        probe = r.state is CircuitState.HALF_OPEN
        if op == "ok":
            r = succeed(s, r, epoch=r.epoch, probe=probe, now=now).record
        elif op == "fail":
            r = fail(s, r, epoch=r.epoch, probe=probe, now=now).record
        elif op == "acquire":
            r = acquire(s, r, now).record
        elif op == "release":
            r = release(r, epoch=r.epoch, probe=probe).record
        else:
            now += 7.0
        seen.append((r, now))
    return seen


@given(_settings, _ops)
def test_a_quiet_success_really_changes_nothing(s: BreakerSettings, ops: list[str]) -> None:
    for r, now in _walk(s, ops):
        for probe in (False, True):
            if quiet_success(s, r, r.epoch):
                assert succeed(s, r, epoch=r.epoch, probe=probe, now=now).record is r


@given(_settings, _ops)
def test_probes_never_exceed_the_limit(s: BreakerSettings, ops: list[str]) -> None:
    for r, _ in _walk(s, ops):
        assert 0 <= r.probes <= s.half_open_max_probes
        assert r.probe_successes < s.success_threshold or r.state is not CircuitState.HALF_OPEN
