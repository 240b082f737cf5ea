"""The retry drivers and a limiter whose waits may end early (``ReservingLimiterLike``):
provisional waits are slept in pieces and rechecked, every attempt's reservation is
settled, and a limiter discovering its limits holds callers until its probe answers
(threads for ``call``, asyncio for ``acall``; ``FakeClock`` time throughout)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading

import pytest

import backstay
from backstay import DeadlineExceeded, Failure, RetryPolicy
from backstay.policy import JitterMode
from backstay.policy.ratelimit import HOLD_RECHECK_S, RateLimiter
from backstay.testing import FakeClock

EXACT = RetryPolicy(
    name="exact", max_attempts=3, initial_delay_s=1.0, max_delay_s=60.0, jitter_mode=JitterMode.NONE
)
ONCE = RetryPolicy(name="once", max_attempts=1)
BOUND_S = 10.0  # the longest a test waits for another thread or task (real time)


@dataclasses.dataclass(frozen=True)
class _Held:
    wait_s: float
    recheck_s: float | None


class _Scripted:
    """Hands out ``first``, then answers each recheck with the next of ``rechecks``."""

    name = "scripted"

    def __init__(self, first: _Held, rechecks: list[_Held]) -> None:
        self.first = first
        self.rechecks = rechecks
        self.settled: list[_Held] = []
        self.reservations = 0

    def reserve(self, tokens: float = 1.0) -> float:
        raise AssertionError("a reserving limiter is asked for reservations")

    def observe(self, failure: Failure) -> None:
        pass

    def reservation(self, tokens: float = 1.0) -> _Held:
        self.reservations += 1
        return self.first

    def recheck(self, reservation: _Held) -> _Held:
        return self.rechecks.pop(0)

    def settle(self, reservation: _Held) -> None:
        self.settled.append(reservation)


def test_a_provisional_wait_is_slept_in_pieces_until_the_limiter_places_it() -> None:
    clock = FakeClock()
    limiter = _Scripted(_Held(2.0, 0.5), [_Held(1.5, 0.5), _Held(0.25, None)])
    assert backstay.call(lambda: "ok", limiter=limiter, clock=clock) == "ok"
    assert clock.sleeps == [0.5, 0.5, 0.25]


def test_rechecks_never_run_past_the_end_of_the_first_wait() -> None:
    clock = FakeClock()
    # A limiter that keeps answering "one more second": the driver stops at the first's end.
    limiter = _Scripted(_Held(1.0, 0.25), [_Held(1.0, 0.25)] * 10)
    backstay.call(lambda: "ok", limiter=limiter, clock=clock)
    assert clock.sleeps == [0.25, 0.25, 0.25, 0.25]


def test_every_attempts_reservation_is_settled_once() -> None:
    limiter = _Scripted(_Held(0.0, None), [])
    flaky = iter([ConnectionResetError(), None])

    def fn() -> str:
        error = next(flaky)
        if error is not None:
            raise error
        return "ok"

    backstay.call(fn, policy=EXACT, limiter=limiter, clock=FakeClock())
    assert (limiter.reservations, len(limiter.settled)) == (2, 2)


def test_a_held_wait_past_the_deadline_gives_up_and_settles() -> None:
    limiter = _Scripted(_Held(5.0, 0.5), [_Held(4.5, 0.5)] * 20)
    policy = EXACT.derive(name="short", deadline_s=1.2)
    with pytest.raises(DeadlineExceeded):
        backstay.call(lambda: "ok", policy=policy, limiter=limiter, clock=FakeClock())
    assert len(limiter.settled) == 1


def test_the_async_driver_rechecks_and_settles_too() -> None:
    clock = FakeClock()
    limiter = _Scripted(_Held(2.0, 0.5), [_Held(0.75, None)])

    async def fn() -> str:
        return "ok"

    assert asyncio.run(backstay.acall(fn, limiter=limiter, clock=clock)) == "ok"
    assert (clock.sleeps, len(limiter.settled)) == ([0.5, 0.75], 1)


# -- a limiter discovering its limits, with threads -------------------------------------


class _GatedClock(FakeClock):
    """A FakeClock whose sleeps, once recorded, wait for the test to open ``gate``."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.slept = threading.Event()

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        self.slept.set()
        assert self.gate.wait(BOUND_S)


def _in_thread(fn: object, limiter: RateLimiter, clock: FakeClock) -> threading.Thread:
    def run() -> None:
        with contextlib.suppress(ConnectionResetError):  # the failing probe's, expected
            backstay.call(fn, policy=ONCE, limiter=limiter, clock=clock)  # type: ignore[arg-type]

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_callers_are_held_while_the_probe_is_out_then_go_at_the_pace_it_learned() -> None:
    clock = _GatedClock()
    limiter = RateLimiter("api", clock=clock)
    in_probe, answer, started = threading.Event(), threading.Event(), []

    def probe() -> None:
        in_probe.set()
        assert answer.wait(BOUND_S)
        headers = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0"}
        limiter.update_from_headers(headers)

    prober = _in_thread(probe, limiter, clock)
    assert in_probe.wait(BOUND_S)
    held = _in_thread(lambda: started.append(clock.monotonic()), limiter, clock)
    assert clock.slept.wait(BOUND_S)
    assert started == []  # held while the probe is out
    answer.set()
    prober.join(BOUND_S)
    clock.gate.set()
    held.join(BOUND_S)
    # One recheck's sleep, then the second a minute's 60 requests leave between two.
    assert clock.sleeps == [HOLD_RECHECK_S, 1.0]
    assert len(started) == 1


def test_a_probe_that_fails_releases_the_held_callers() -> None:
    clock = _GatedClock()
    limiter = RateLimiter("api", clock=clock)
    in_probe, answer, started = threading.Event(), threading.Event(), []

    def probe() -> None:
        in_probe.set()
        assert answer.wait(BOUND_S)
        raise ConnectionResetError

    prober = _in_thread(probe, limiter, clock)
    assert in_probe.wait(BOUND_S)
    held = _in_thread(lambda: started.append(True), limiter, clock)
    assert clock.slept.wait(BOUND_S)
    answer.set()
    prober.join(BOUND_S)
    clock.gate.set()
    held.join(BOUND_S)
    assert (clock.sleeps, started) == ([HOLD_RECHECK_S], [True])


def test_a_probe_that_never_answers_holds_the_others_only_for_its_timeout() -> None:
    clock = FakeClock()
    limiter = RateLimiter("api", probe_timeout_s=1.0, clock=clock)
    limiter.reservation()  # the probe, whose attempt never ends
    assert backstay.call(lambda: "ok", limiter=limiter, clock=clock) == "ok"
    assert sum(clock.sleeps) == pytest.approx(1.0)
    assert max(clock.sleeps) <= HOLD_RECHECK_S


# -- the same with asyncio --------------------------------------------------------------


class _AsyncGatedClock(FakeClock):
    """A FakeClock whose async sleeps, once recorded, wait for the test's ``gate``."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.slept = asyncio.Event()

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)
        self.slept.set()
        await self.gate.wait()


def test_async_callers_are_held_until_the_probe_answers() -> None:
    async def scenario() -> tuple[list[float], list[bool]]:
        clock = _AsyncGatedClock()
        limiter = RateLimiter("api", clock=clock)
        in_probe, answer, started = asyncio.Event(), asyncio.Event(), []

        async def probe() -> None:
            in_probe.set()
            await answer.wait()

        async def other() -> None:
            started.append(True)

        async with asyncio.timeout(BOUND_S):
            prober = asyncio.create_task(backstay.acall(probe, limiter=limiter, clock=clock))
            await in_probe.wait()
            held = asyncio.create_task(backstay.acall(other, limiter=limiter, clock=clock))
            await clock.slept.wait()
            assert started == []
            answer.set()
            await prober
            clock.gate.set()
            await held
        return clock.sleeps, started

    assert asyncio.run(scenario()) == ([HOLD_RECHECK_S], [True])


def test_a_cancelled_probe_releases_the_held() -> None:
    async def scenario() -> bool:
        clock = FakeClock()
        limiter = RateLimiter("api", clock=clock)
        in_probe = asyncio.Event()

        async def probe() -> None:
            in_probe.set()
            await asyncio.Event().wait()

        async with asyncio.timeout(BOUND_S):
            task = asyncio.create_task(backstay.acall(probe, limiter=limiter, clock=clock))
            await in_probe.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        return limiter.snapshot().discovering

    assert asyncio.run(scenario()) is False
