"""choose / plan_failure: which candidate runs next, and what a failure leads to."""

from __future__ import annotations

from backstay.failure import Failure
from backstay.fallback.candidate import Candidate, Needs
from backstay.fallback.rules import FallbackRules
from backstay.fallback.select import Tried, choose, cooldown_targets, plan_failure
from backstay.policy.retry import GiveUpReason, RetryPolicy

RULES = FallbackRules()
BIG = Candidate(provider="anthropic", model="big", context_window=200_000)
SMALL = Candidate(provider="openai", model="small", context_window=8_000)
HUGE = Candidate(provider="gemini", model="huge", context_window=1_000_000)
ALL = (SMALL, BIG, HUGE)
UP = [True, True, True]
POLICY = RetryPolicy(max_attempts=3, jitter=0.0)


def _tried(index: int, code: str, *, partial: bool = False, **kw: object) -> Tried:
    return Tried(index=index, failure=Failure(code=code, **kw), partial=partial)  # type: ignore[arg-type]


def test_a_fresh_call_takes_the_first_available_candidate() -> None:
    assert choose(RULES, ALL, tried=[], available=UP) == 0
    assert choose(RULES, ALL, tried=[], available=[False, True, True]) == 1


def test_a_fresh_call_waits_when_nothing_is_available() -> None:
    assert choose(RULES, ALL, tried=[], available=[False, False, False]) is None


def test_a_server_error_moves_to_the_next_candidate_in_order() -> None:
    tried = [_tried(0, "ERR_HTTP_503_UNAVAILABLE")]
    assert choose(RULES, ALL, tried=tried, available=UP) == 1


def test_a_context_overflow_skips_a_smaller_candidate() -> None:
    order = (BIG, SMALL, HUGE)
    tried = [_tried(0, "ERR_LLM_CONTEXT_LENGTH")]
    assert choose(RULES, order, tried=tried, available=UP) == 2


def test_a_context_overflow_without_a_larger_candidate_stays() -> None:
    tried = [_tried(2, "ERR_LLM_CONTEXT_LENGTH")]
    assert choose(RULES, ALL, tried=tried, available=UP) == 2


def test_an_invalid_request_stays() -> None:
    assert choose(RULES, ALL, tried=[_tried(0, "ERR_HTTP_400_BAD_REQUEST")], available=UP) == 0


def test_an_interrupted_stream_stays_even_when_its_kind_moves() -> None:
    tried = [_tried(0, "ERR_HTTP_503_UNAVAILABLE", partial=True)]
    assert choose(RULES, ALL, tried=tried, available=UP) == 0


def test_an_interrupted_stream_waits_for_its_own_candidate() -> None:
    tried = [_tried(0, "ERR_LLM_STREAM_ERROR", details={"stream_interrupted": True})]
    assert choose(RULES, ALL, tried=tried, available=[False, True, True]) is None


def test_auth_moves_to_another_credential() -> None:
    same_key = Candidate(provider="anthropic", model="other")
    order = (BIG, same_key, SMALL)
    tried = [_tried(0, "ERR_HTTP_401_UNAUTHORIZED")]
    assert choose(RULES, order, tried=tried, available=UP) == 2


def test_a_named_credential_is_another_credential() -> None:
    rotated = Candidate(provider="anthropic", model="big", api_key_env="SPARE_KEY")
    tried = [_tried(0, "ERR_HTTP_401_UNAUTHORIZED")]
    assert choose(RULES, (BIG, rotated), tried=tried, available=[True, True]) == 1


def test_a_move_skips_candidates_this_call_saw_fail() -> None:
    tried = [_tried(0, "ERR_HTTP_503_UNAVAILABLE"), _tried(1, "ERR_HTTP_503_UNAVAILABLE")]
    assert choose(RULES, ALL, tried=tried, available=UP) == 2


def test_with_every_candidate_failed_the_last_one_is_retried() -> None:
    tried = [_tried(0, "ERR_HTTP_503_UNAVAILABLE"), _tried(1, "ERR_HTTP_503_UNAVAILABLE")]
    assert choose(RULES, (SMALL, BIG), tried=tried, available=[True, True]) == 1


def test_a_candidate_lacking_what_the_call_needs_is_never_chosen() -> None:
    no_tools = Candidate(provider="openai", model="plain", tools=False)
    needs = Needs(tools=True)
    assert choose(RULES, (no_tools, BIG), tried=[], available=[True, True], needs=needs) == 1


def test_a_move_happens_at_once_and_counts_an_attempt() -> None:
    step = plan_failure(
        POLICY,
        Failure(code="ERR_HTTP_503_UNAVAILABLE"),
        current=0,
        target=1,
        attempt=1,
        elapsed_s=0.0,
        previous_delay_s=None,
        draw=0.5,
    )
    assert (step.retry, step.candidate, step.delay_s) == (True, 1, 0.0)
    assert step.moved_from(0)


def test_a_move_past_the_attempt_budget_gives_up() -> None:
    step = plan_failure(
        POLICY,
        Failure(code="ERR_HTTP_503_UNAVAILABLE"),
        current=0,
        target=1,
        attempt=3,
        elapsed_s=0.0,
        previous_delay_s=None,
        draw=0.5,
    )
    assert (step.retry, step.reason) == (False, GiveUpReason.ATTEMPTS_EXHAUSTED)


def test_a_move_past_the_deadline_gives_up() -> None:
    step = plan_failure(
        POLICY.derive(deadline_s=5.0),
        Failure(code="ERR_HTTP_503_UNAVAILABLE"),
        current=0,
        target=1,
        attempt=1,
        elapsed_s=6.0,
        previous_delay_s=None,
        draw=0.5,
    )
    assert (step.retry, step.reason) == (False, GiveUpReason.DEADLINE)


def test_a_quota_moves_although_it_is_not_retryable() -> None:
    step = plan_failure(
        POLICY,
        Failure(code="ERR_LLM_QUOTA_EXHAUSTED"),
        current=0,
        target=1,
        attempt=1,
        elapsed_s=0.0,
        previous_delay_s=None,
        draw=0.5,
    )
    assert step.retry
    assert step.candidate == 1


def test_staying_is_the_retry_policy_decision() -> None:
    step = plan_failure(
        POLICY,
        Failure(code="ERR_HTTP_503_UNAVAILABLE"),
        current=0,
        target=0,
        attempt=1,
        elapsed_s=0.0,
        previous_delay_s=None,
        draw=0.5,
    )
    assert (step.retry, step.candidate, step.delay_s) == (True, 0, POLICY.initial_delay_s)


def test_an_invalid_request_gives_up_where_it_is() -> None:
    step = plan_failure(
        POLICY,
        Failure(code="ERR_HTTP_400_BAD_REQUEST"),
        current=0,
        target=0,
        attempt=1,
        elapsed_s=0.0,
        previous_delay_s=None,
        draw=0.5,
    )
    assert (step.retry, step.reason) == (False, GiveUpReason.NOT_RETRYABLE)


def test_auth_cools_down_every_candidate_of_the_credential() -> None:
    same_key = Candidate(provider="anthropic", model="other")
    order = (BIG, SMALL, same_key)
    found = cooldown_targets(RULES, order, Failure(code="ERR_HTTP_401_UNAUTHORIZED"), current=0)
    assert [i for i, _ in found] == [0, 2]


def test_a_long_rate_limit_cools_down_only_the_failing_candidate() -> None:
    failure = Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=30.0)
    assert cooldown_targets(RULES, ALL, failure, current=1) == ((1, 30.0),)
