"""A request whose own failures open its model's circuit, with no fallback model to move
to, is not handed its stale last failure (``gateway/probe.py``): when the circuit's next
probe lies within what the gateway's policy lets it wait, it waits and is sent as the
probe; otherwise it gets the open circuit's 503 with the wait (``retry-after`` and "next
probe in N s"), so the caller's retry waits for the probe at once. A request whose last
allowed attempt opens the circuit waits for one probe past its ``max_attempts`` when its
deadline and ``max_retry_after_s`` hold the wait, else gets that last answer.

Through the real parts: the official anthropic SDK (its retries off) against a real
gateway in front of the fake provider, which answers 529 until the breaker opens and then
200. The decision itself (``probe_wait``) and the wait on a real ``CircuitBreaker`` (on a
``FakeClock``) are tested beside them. A request that can move to its run's fallback model
does so as before (``tests/gateway/test_runs_fallback.py``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import time
from pathlib import Path
from typing import Final

import anthropic
import pytest
from tests.gateway.helpers import ANTHROPIC_MODEL, FAST_POLICY, MESSAGES, anthropic_client, served

from backstay.breaker import BreakerSettings, CircuitBreaker, CircuitState
from backstay.classify import classify
from backstay.classify._waits import wait_from_message
from backstay.errors import CircuitOpen
from backstay.failure import Failure
from backstay.fakeprovider import Fault, FaultKind
from backstay.gateway import RequestRetried
from backstay.gateway.probe import (
    MAX_PROBE_WAITS,
    PROBE_POLL_S,
    ProbeWaited,
    await_probe,
    probe_wait,
    remaining_policy,
)
from backstay.policy.protocols import Permit
from backstay.policy.retry import RETRY_AFTER_MARGIN_S, RetryPolicy
from backstay.testing import FakeClock, capture_events

THRESHOLD: Final = 2
OVERLOADED: Final = Failure(code="ERR_HTTP_529_OVERLOADED")
POLICY: Final = FAST_POLICY  # 8 attempts, max_retry_after_s 300 s, deadline 60 s


def _breaker(open_duration_s: float) -> BreakerSettings:
    return BreakerSettings(
        failure_threshold=THRESHOLD, failure_rate_threshold=None, open_duration_s=open_duration_s
    )


# -- the decision --------------------------------------------------------------------------


def test_a_probe_within_the_policy_is_waited_for_a_little_past_its_time() -> None:
    wait = probe_wait(POLICY, 30.0, attempts=2, elapsed_s=1.0)
    assert wait == 30.0 + RETRY_AFTER_MARGIN_S


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ((POLICY.max_retry_after_s + 1.0, 2, 0.0, 0.0, 0), "longer than max_retry_after_s"),
        ((10.0, 2, 0.0, POLICY.max_retry_after_s - 5.0, 0), "this wait adds up past it"),
        ((30.0, 2, 40.0, 0.0, 0), "past the deadline"),
        ((1.0, POLICY.max_attempts, 0.0, 0.0, 0), "no attempt left for the probe"),
        ((1.0, 2, 0.0, 0.0, MAX_PROBE_WAITS), "waited too many times"),
    ],
)
def test_a_probe_past_what_the_request_may_wait_is_not_waited_for(
    case: tuple[float, int, float, float, int], why: str
) -> None:
    retry_after_s, attempts, elapsed_s, waited_s, waits = case
    wait = probe_wait(
        POLICY,
        retry_after_s,
        attempts=attempts,
        elapsed_s=elapsed_s,
        waited_s=waited_s,
        waits=waits,
    )
    assert wait is None, why


def test_while_every_probe_is_out_the_circuit_is_asked_again_soon() -> None:
    wait = probe_wait(POLICY, None, attempts=2, elapsed_s=1.0)
    assert wait == PROBE_POLL_S + RETRY_AFTER_MARGIN_S


def test_without_a_deadline_only_max_retry_after_bounds_the_wait() -> None:
    policy = POLICY.derive(deadline_s=None)
    assert probe_wait(policy, 200.0, attempts=2, elapsed_s=10_000.0) is not None


def test_the_probe_goes_with_what_is_left_of_the_policy() -> None:
    left = remaining_policy(POLICY, attempts=3, elapsed_s=12.5)
    assert (left.max_attempts, left.deadline_s) == (POLICY.max_attempts - 3, 60.0 - 12.5)
    assert left.name == POLICY.name
    spent = remaining_policy(POLICY, attempts=20, elapsed_s=90.0)
    assert (spent.max_attempts, spent.deadline_s) == (1, 0.0)


# -- the wait, on a real breaker -----------------------------------------------------------


def _waited(
    breaker: CircuitBreaker, policy: RetryPolicy, refused: CircuitOpen, clock: FakeClock
) -> ProbeWaited:
    """``await_probe`` after the ``THRESHOLD`` failures that opened ``breaker``, at once."""
    since = clock.monotonic()
    return asyncio.run(await_probe(breaker, policy, refused, THRESHOLD, 0, since, clock=clock))


def _opened(clock: FakeClock, open_duration_s: float) -> tuple[CircuitBreaker, CircuitOpen]:
    breaker = CircuitBreaker("probe-test", settings=_breaker(open_duration_s), clock=clock)
    for _ in range(THRESHOLD):
        breaker.acquire().failure(OVERLOADED)
    with pytest.raises(CircuitOpen) as refused:
        breaker.acquire()
    return breaker, refused.value


def test_the_wait_ends_when_the_circuit_lets_a_probe_go() -> None:
    clock = FakeClock()
    breaker, refused = _opened(clock, 30.0)
    waited = _waited(breaker, POLICY, refused, clock)
    assert waited.probing is not None
    assert clock.sleeps == [30.0 + RETRY_AFTER_MARGIN_S]
    # The next attempt is the probe, under what is left of the policy.
    assert breaker.snapshot().retry_after_s == 0.0  # still open, its probe free
    breaker.acquire().success()
    assert breaker.state is CircuitState.CLOSED
    assert waited.probing.policy.max_attempts == POLICY.max_attempts - THRESHOLD
    assert waited.probing.waits == 1


class _ProbeAnswersLater(FakeClock):
    """A clock whose third sleep is when another request's probe answers (a success)."""

    def __init__(self) -> None:
        super().__init__()
        self.answer: list[Permit] = []

    async def asleep(self, seconds: float) -> None:
        await super().asleep(seconds)
        if len(self.sleeps) == 3:
            self.answer.pop().success()


def test_while_another_requests_probe_is_out_the_wait_polls_until_it_answers() -> None:
    clock = _ProbeAnswersLater()
    breaker, _ = _opened(clock, 30.0)
    clock.advance(31.0)
    clock.answer.append(breaker.acquire())  # another request's probe, still out
    with pytest.raises(CircuitOpen) as refused:
        breaker.acquire()
    assert refused.value.retry_after_s is None
    waited = _waited(breaker, POLICY, refused.value, clock)
    assert waited.probing is not None
    assert clock.sleeps == [PROBE_POLL_S + RETRY_AFTER_MARGIN_S] * 3
    assert breaker.state is CircuitState.CLOSED


def test_a_probe_past_the_deadline_is_not_slept_for() -> None:
    clock = FakeClock()
    breaker, refused = _opened(clock, 30.0)
    policy = POLICY.derive(deadline_s=10.0)
    waited = _waited(breaker, policy, refused, clock)
    assert waited.probing is None
    assert waited.retry_after_s == refused.retry_after_s
    assert clock.sleeps == []


# -- through the gateway: the anthropic SDK, the fake provider -----------------------------


def _sent(url: str, **options: float) -> tuple[anthropic.types.Message, str]:
    """One client request: the answer and its ``x-backstay-attempts``."""
    with anthropic_client(url, **options) as client:
        raw = client.messages.with_raw_response.create(
            model=ANTHROPIC_MODEL,
            max_tokens=20,
            messages=MESSAGES,  # type: ignore[arg-type]
        )
        return raw.parse(), raw.headers["x-backstay-attempts"]


@pytest.mark.parametrize("failed_probes", [0, 1])
def test_a_request_that_opened_its_circuit_waits_and_is_sent_as_the_probe(
    tmp_path: Path, failed_probes: int
) -> None:
    """529s until the circuit opens (and, in the second case, a probe that fails and opens
    it again): one client request, answered 200 by the probe."""
    overloaded = Fault(kind=FaultKind.OVERLOADED, first=THRESHOLD + failed_probes)
    with (
        served(tmp_path, overloaded, breaker=_breaker(1.0)) as s,
        capture_events() as events,
    ):
        message, attempts = _sent(s.url)
        stats = s.fake.stats()
        state = s.gateway.breakers.breaker_for(("anthropic", ANTHROPIC_MODEL)).state
    assert message.content
    assert attempts == str(THRESHOLD + failed_probes + 1)
    assert dict(stats.by_status) == {529: THRESHOLD + failed_probes, 200: 1}
    assert state is CircuitState.CLOSED
    [retried] = [e for e in events if isinstance(e, RequestRetried)]
    assert (retried.attempts, retried.status, retried.outcome) == (
        THRESHOLD + failed_probes + 1,
        200,
        "succeeded",
    )
    # It waited for each probe: the whole request took the open circuit's time (or twice).
    assert retried.elapsed_s >= 1.0 * (failed_probes + 1)
    opened = events.named("circuit.opened")
    assert len(opened) == failed_probes + 1


def test_two_requests_whose_failures_opened_the_circuit_share_its_probe(tmp_path: Path) -> None:
    """Each fails once (the 529 asks for 1 s, so both fail before either retries), which
    opens the circuit; both wait for the probe: one is sent as it, the other waits for its
    answer and then goes. Both clients get a 200."""
    overloaded = Fault(kind=FaultKind.OVERLOADED, first=THRESHOLD, retry_after_s=1.0)
    with (
        served(tmp_path, overloaded, breaker=_breaker(2.0)) as s,
        capture_events() as events,
    ):
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            answers = list(pool.map(lambda _: _sent(s.url), range(2)))
        stats = s.fake.stats()
    assert [attempts for _, attempts in answers] == ["2", "2"]
    assert dict(stats.by_status) == {529: THRESHOLD, 200: 2}
    # One probe: the circuit opened once, half-opened once, and closed on its answer.
    changes = [e.name for e in events if e.name.startswith("circuit.")]
    assert changes == ["circuit.opened", "circuit.half_opened", "circuit.closed"]


@pytest.mark.parametrize(
    "policy",
    [
        POLICY.derive(max_retry_after_s=5.0),  # the probe is a longer wait than it accepts
        POLICY.derive(deadline_s=10.0),  # the probe lies past the request's deadline
    ],
    ids=["max_retry_after", "deadline"],
)
def test_a_request_that_opened_its_circuit_is_told_when_the_probe_is(
    tmp_path: Path, policy: object
) -> None:
    """The probe is 30 s away, past what the request may wait: a 503 at once, whose
    ``retry-after`` and message carry the wait; no request more reaches the provider."""
    overloaded = Fault(kind=FaultKind.OVERLOADED, first=THRESHOLD)
    with (
        served(tmp_path, overloaded, breaker=_breaker(30.0), policy=policy) as s,
        capture_events() as events,
        pytest.raises(anthropic.APIStatusError) as raised,
    ):
        _sent(s.url)
    stats = s.fake.stats()
    refused = raised.value
    assert refused.status_code == 503
    assert dict(stats.by_status) == {529: THRESHOLD}
    retry_after = float(refused.response.headers["retry-after"])
    message = refused.message
    assert "backstay gateway: this request's 2 attempts failed; circuit " in message
    in_text = wait_from_message(message)
    assert in_text is not None
    assert 29.0 <= in_text <= 30.0
    assert retry_after == math.ceil(in_text)
    # What a caller's classifier makes of it: wait for the probe, not its own delay.
    failure = classify(refused)
    assert failure.retry_after_s is not None
    assert abs(failure.retry_after_s - in_text) <= 1.0
    [retried] = [e for e in events if isinstance(e, RequestRetried)]
    assert (retried.attempts, retried.status, retried.outcome) == (THRESHOLD, 503, "circuit_open")
    assert retried.failure is not None
    assert retried.failure.code == "ERR_HTTP_529_OVERLOADED"


def test_a_client_that_hangs_up_while_its_request_waits_for_the_probe_ends_the_wait(
    tmp_path: Path,
) -> None:
    """The wait is the request's: a client gone ends it, and no probe is sent for it."""
    overloaded = Fault(kind=FaultKind.OVERLOADED, first=THRESHOLD)
    with served(tmp_path, overloaded, breaker=_breaker(30.0)) as s:
        with pytest.raises(anthropic.APITimeoutError):
            _sent(s.url, timeout=1.0)
        bound = time.monotonic() + 20.0
        while s.gateway.active_requests and time.monotonic() < bound:
            time.sleep(0.02)
        assert s.gateway.active_requests == 0
        snapshot = s.gateway.breakers.breaker_for(("anthropic", ANTHROPIC_MODEL)).snapshot()
        stats = s.fake.stats()
    assert dict(stats.by_status) == {529: THRESHOLD}
    assert snapshot.state is CircuitState.OPEN
    assert snapshot.retry_after_s is not None
    assert snapshot.retry_after_s > 0.0


# -- a request that comes while the circuit is open ----------------------------------------


def test_a_request_that_comes_while_the_circuit_is_open_waits_for_the_probe(
    tmp_path: Path,
) -> None:
    """Other calls' failures opened the circuit (two 529s counted on the gateway's own
    breaker); a request sent while it is open waits for the probe, is sent as it, and is
    answered 200 on its one attempt."""
    with (
        served(tmp_path, breaker=_breaker(1.0)) as s,
        capture_events() as events,
    ):
        breaker = s.gateway.breakers.breaker_for(("anthropic", ANTHROPIC_MODEL))
        for _ in range(THRESHOLD):
            breaker.acquire().failure(OVERLOADED)
        assert breaker.state is CircuitState.OPEN
        message, attempts = _sent(s.url)
        stats = s.fake.stats()
    assert message.content
    assert attempts == "1"
    assert dict(stats.by_status) == {200: 1}
    assert breaker.state is CircuitState.CLOSED
    [retried] = [e for e in events if isinstance(e, RequestRetried)]
    assert (retried.attempts, retried.status, retried.outcome) == (1, 200, "succeeded")
    assert retried.elapsed_s > 0.5  # it waited for the probe


# -- a request whose last allowed attempt opens the circuit --------------------------------


def test_a_request_whose_last_allowed_attempt_opens_its_circuit_is_sent_as_the_probe(
    tmp_path: Path,
) -> None:
    """Its ``max_attempts`` (2) are the two 529s that open the circuit: rather than that
    529, it waits for the probe (1 s, within its deadline) and is sent as it, one attempt
    past its last; the client gets the probe's 200."""
    overloaded = Fault(kind=FaultKind.OVERLOADED, first=THRESHOLD)
    policy = POLICY.derive(max_attempts=THRESHOLD)
    with (
        served(tmp_path, overloaded, breaker=_breaker(1.0), policy=policy) as s,
        capture_events() as events,
    ):
        message, attempts = _sent(s.url)
        stats = s.fake.stats()
        state = s.gateway.breakers.breaker_for(("anthropic", ANTHROPIC_MODEL)).state
    assert message.content
    assert attempts == str(THRESHOLD + 1)
    assert dict(stats.by_status) == {529: THRESHOLD, 200: 1}
    assert state is CircuitState.CLOSED
    [retried] = [e for e in events if isinstance(e, RequestRetried)]
    assert (retried.attempts, retried.status, retried.outcome) == (THRESHOLD + 1, 200, "succeeded")
    assert retried.elapsed_s >= 1.0  # it waited for the probe


def test_a_request_whose_last_allowed_attempt_opens_its_circuit_waits_for_one_probe_only(
    tmp_path: Path,
) -> None:
    """The probe fails too (a third 529): the client gets that 529, with no second wait."""
    overloaded = Fault(kind=FaultKind.OVERLOADED, first=THRESHOLD + 1)
    policy = POLICY.derive(max_attempts=THRESHOLD)
    with served(tmp_path, overloaded, breaker=_breaker(0.5), policy=policy) as s:
        with pytest.raises(anthropic.APIStatusError) as raised:
            _sent(s.url)
        stats = s.fake.stats()
    assert raised.value.status_code == 529
    assert raised.value.response.headers["x-backstay-attempts"] == str(THRESHOLD + 1)
    assert dict(stats.by_status) == {529: THRESHOLD + 1}


def test_a_request_whose_last_allowed_attempt_opens_its_circuit_past_its_deadline_gets_it(
    tmp_path: Path,
) -> None:
    """The probe (30 s) lies past its deadline (10 s): it gets its last 529 at once, as
    before, and nothing more reaches the provider."""
    overloaded = Fault(kind=FaultKind.OVERLOADED, first=THRESHOLD)
    policy = POLICY.derive(max_attempts=THRESHOLD, deadline_s=10.0)
    with served(tmp_path, overloaded, breaker=_breaker(30.0), policy=policy) as s:
        with pytest.raises(anthropic.APIStatusError) as raised:
            _sent(s.url)
        stats = s.fake.stats()
    assert raised.value.status_code == 529
    assert dict(stats.by_status) == {529: THRESHOLD}


def test_a_request_that_comes_while_the_circuit_is_open_is_told_when_the_probe_is(
    tmp_path: Path,
) -> None:
    """The probe is 30 s away, past the policy's ``max_retry_after_s``: a 503 at once with
    the wait, and nothing more upstream."""
    overloaded = Fault(kind=FaultKind.OVERLOADED, first=THRESHOLD)
    policy = POLICY.derive(max_attempts=THRESHOLD, max_retry_after_s=5.0)
    with served(tmp_path, overloaded, breaker=_breaker(30.0), policy=policy) as s:
        with pytest.raises(anthropic.APIStatusError):
            _sent(s.url)
        with pytest.raises(anthropic.APIStatusError) as raised:
            _sent(s.url)
        stats = s.fake.stats()
    refused = raised.value
    assert refused.status_code == 503
    assert dict(stats.by_status) == {529: THRESHOLD}
    in_text = wait_from_message(refused.message)
    assert in_text is not None
    assert 28.0 <= in_text <= 30.0
    assert float(refused.response.headers["retry-after"]) == math.ceil(in_text)
