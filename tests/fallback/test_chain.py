"""FallbackChain: moves, cooldowns, breakers and one budget over the chain (FakeClock)."""

from __future__ import annotations

import asyncio

import pytest

from backstay.breaker.settings import BreakerSettings
from backstay.errors import AdapterError, ConfigError, DeadlineExceeded
from backstay.failure import Failure
from backstay.fallback import (
    Candidate,
    FallbackChain,
    FallbackRules,
    MemoryFallbackStore,
    NoCandidateAvailable,
)
from backstay.policy.retry import RetryPolicy
from backstay.testing import FakeClock, capture_events

PRIMARY = Candidate(provider="anthropic", model="claude-haiku-4-5", context_window=200_000)
SECONDARY = Candidate(
    provider="openai", model="gpt-4o-mini", context_window=128_000, api_key_env="OPENAI_API_KEY"
)
POLICY = RetryPolicy(max_attempts=4, jitter=0.0, initial_delay_s=0.5)
BREAKER = BreakerSettings(failure_threshold=2, failure_rate_threshold=None, open_duration_s=30.0)


def _fail(code: str, **kw: object) -> AdapterError:
    return AdapterError(Failure(code=code, **kw))  # type: ignore[arg-type]


def _chain(clock: FakeClock, **kw: object) -> FallbackChain:
    options: dict[str, object] = {"policy": POLICY, "breaker": BREAKER, "clock": clock}
    options.update(kw)
    return FallbackChain([PRIMARY, SECONDARY], **options)  # type: ignore[arg-type]


class Outage:
    """The primary answers 503 while ``down``; the secondary always answers."""

    def __init__(self) -> None:
        self.down = True
        self.calls: list[str] = []

    def __call__(self, candidate: Candidate) -> str:
        self.calls.append(candidate.model)
        if candidate is PRIMARY and self.down:
            raise _fail("ERR_HTTP_503_UNAVAILABLE")
        return candidate.model


def test_a_call_that_succeeds_says_the_requested_candidate_answered() -> None:
    answer = _chain(FakeClock()).call(lambda c: c.model)
    assert (answer.value, answer.candidate, answer.requested) == (
        "claude-haiku-4-5",
        PRIMARY,
        PRIMARY,
    )
    assert answer.attempts == 1
    assert not answer.fell_back


def test_a_server_error_falls_back_at_once() -> None:
    clock = FakeClock()
    answer = _chain(clock).call(Outage())
    assert answer.candidate == SECONDARY
    assert answer.requested == PRIMARY
    assert answer.attempts == 2
    assert clock.sleeps == []


def test_an_outage_moves_work_to_the_fallback_and_back_when_the_circuit_closes() -> None:
    clock = FakeClock()
    chain = _chain(clock)
    outage = Outage()
    for _ in range(2):  # two failures open the primary's circuit
        assert chain.call(outage).candidate == SECONDARY
    outage.calls.clear()
    assert chain.call(outage).candidate == SECONDARY
    assert outage.calls == ["gpt-4o-mini"]  # the open circuit is not even tried
    outage.down = False
    clock.advance(31.0)
    answer = chain.call(outage)
    assert answer.candidate == PRIMARY
    assert answer.attempts == 1


def test_a_falling_back_call_emits_fell_back_with_both_candidates_and_the_kind() -> None:
    with capture_events() as events:
        _chain(FakeClock()).call(Outage())
    (moved,) = events.named("retry.fell_back")
    data = moved.to_dict()
    assert data["from_candidate"] == "anthropic/claude-haiku-4-5"
    assert data["to_candidate"] == "openai/gpt-4o-mini@OPENAI_API_KEY"
    assert data["kind"] == "server_error"


def test_an_invalid_request_never_moves_and_the_original_error_propagates() -> None:
    calls: list[str] = []

    def fn(candidate: Candidate) -> str:
        calls.append(candidate.model)
        raise _fail("ERR_HTTP_400_BAD_REQUEST")

    with pytest.raises(AdapterError) as caught:
        _chain(FakeClock()).call(fn)
    assert calls == ["claude-haiku-4-5"]
    assert caught.value.failure.code == "ERR_HTTP_400_BAD_REQUEST"
    assert caught.value.candidate == PRIMARY  # type: ignore[attr-defined]


def test_a_stream_broken_after_its_first_token_is_retried_on_the_same_candidate() -> None:
    calls: list[str] = []

    def fn(candidate: Candidate) -> str:
        calls.append(candidate.model)
        if len(calls) == 1:
            raise AdapterError(Failure(code="ERR_CONNECTION_RESET"), partial_output="Hel")
        return candidate.model

    answer = _chain(FakeClock()).call(fn)
    assert calls == ["claude-haiku-4-5", "claude-haiku-4-5"]
    assert answer.candidate == PRIMARY


def test_a_long_rate_limit_cools_the_primary_down_for_later_calls() -> None:
    clock = FakeClock()
    chain = _chain(clock)
    seen: list[str] = []

    def limited(candidate: Candidate) -> str:
        seen.append(candidate.model)
        if candidate is PRIMARY:
            raise _fail("ERR_HTTP_429_RATE_LIMITED", retry_after_s=120.0)
        return candidate.model

    assert chain.call(limited).candidate == SECONDARY
    seen.clear()
    assert chain.call(limited).candidate == SECONDARY
    assert seen == ["gpt-4o-mini"]
    clock.advance(121.0)
    seen.clear()
    chain.call(limited)
    assert seen[0] == "claude-haiku-4-5"  # back to the primary once the cooldown ended


def test_a_short_rate_limit_is_waited_out_on_the_same_candidate() -> None:
    clock = FakeClock()
    calls: list[str] = []

    def fn(candidate: Candidate) -> str:
        calls.append(candidate.model)
        if len(calls) == 1:
            raise _fail("ERR_HTTP_429_RATE_LIMITED", retry_after_s=2.0)
        return candidate.model

    assert _chain(clock).call(fn).candidate == PRIMARY
    assert calls == ["claude-haiku-4-5", "claude-haiku-4-5"]
    assert clock.sleeps
    assert clock.sleeps[0] >= 2.0


def test_attempts_across_candidates_share_one_budget() -> None:
    calls: list[str] = []

    def fn(candidate: Candidate) -> str:
        calls.append(candidate.model)
        raise _fail("ERR_HTTP_503_UNAVAILABLE")

    chain = _chain(FakeClock(), breaker=None, policy=POLICY.derive(max_attempts=3))
    with pytest.raises(AdapterError):
        chain.call(fn)
    assert len(calls) == 3


def test_the_deadline_covers_the_whole_chain() -> None:
    clock = FakeClock()

    def slow(candidate: Candidate) -> str:
        clock.advance(6.0)
        raise _fail("ERR_HTTP_503_UNAVAILABLE")

    chain = _chain(clock, breaker=None, policy=POLICY.derive(max_attempts=10, deadline_s=10.0))
    with pytest.raises(AdapterError):
        chain.call(slow)
    assert clock.monotonic() - 1000.0 <= 12.0 + 1e-9


def test_a_chain_with_every_candidate_cooling_waits_then_refuses_past_max_retry_after() -> None:
    clock = FakeClock()
    chain = _chain(clock)
    for candidate in (PRIMARY, SECONDARY):
        chain.store.cool_down(
            candidate.name, until_s=clock.now().timestamp() + 600.0, reason="test"
        )
    with pytest.raises(NoCandidateAvailable) as caught:
        chain.call(lambda c: c.model)
    assert caught.value.retry_after_s == pytest.approx(600.0)


def test_a_short_wait_for_a_cooling_chain_is_slept() -> None:
    clock = FakeClock()
    chain = _chain(clock)
    for candidate in (PRIMARY, SECONDARY):
        chain.store.cool_down(candidate.name, until_s=clock.now().timestamp() + 5.0, reason="t")
    assert chain.call(lambda c: c.model).candidate == PRIMARY
    assert clock.sleeps == [pytest.approx(5.0)]


def test_a_wait_past_the_deadline_is_refused() -> None:
    clock = FakeClock()
    chain = _chain(clock, policy=POLICY.derive(deadline_s=3.0))
    for candidate in (PRIMARY, SECONDARY):
        chain.store.cool_down(candidate.name, until_s=clock.now().timestamp() + 5.0, reason="t")
    with pytest.raises(DeadlineExceeded):
        chain.call(lambda c: c.model)


def test_chains_sharing_a_store_share_cooldowns_and_circuits() -> None:
    clock = FakeClock()
    store = MemoryFallbackStore()
    first, second = _chain(clock, store=store), _chain(clock, store=store)
    outage = Outage()
    first.call(outage)
    first.call(outage)
    outage.calls.clear()
    assert second.call(outage).candidate == SECONDARY
    assert outage.calls == ["gpt-4o-mini"]


def test_a_cancelled_attempt_releases_its_permit_and_propagates() -> None:
    chain = _chain(FakeClock(), breaker=BREAKER.derive(failure_threshold=1))

    def interrupted(candidate: Candidate) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        chain.call(interrupted)
    assert chain.health.available() == [True, True]


def test_content_policy_moves_when_the_rules_say_so() -> None:
    def refused(candidate: Candidate) -> str:
        if candidate is PRIMARY:
            raise _fail("ERR_LLM_CONTENT_FILTER")
        return candidate.model

    rules = FallbackRules(moves={"content_policy": "next"})
    assert _chain(FakeClock(), rules=rules).call(refused).candidate == SECONDARY
    with pytest.raises(AdapterError):
        _chain(FakeClock()).call(refused)


def test_acall_falls_back_like_call() -> None:
    outage = Outage()

    async def fn(candidate: Candidate) -> str:
        return outage(candidate)

    answer = asyncio.run(_chain(FakeClock()).acall(fn))
    assert answer.candidate == SECONDARY
    assert answer.attempts == 2


def test_a_chain_without_candidates_is_refused() -> None:
    with pytest.raises(ConfigError, match="candidates"):
        FallbackChain([])


def test_a_candidate_given_twice_is_refused() -> None:
    with pytest.raises(ConfigError, match="given twice"):
        FallbackChain([PRIMARY, PRIMARY])
