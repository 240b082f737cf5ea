"""The task state machine and the failure → state mapping."""

from __future__ import annotations

import datetime as dt

import pytest

from backstay import Failure
from backstay.engine import (
    TERMINAL,
    TRANSITIONS,
    InvalidTransition,
    TaskState,
    outcome_for,
    transition,
)

S = TaskState


def test_the_states_are_exactly_the_documented_ones() -> None:
    assert {s.value for s in TaskState} == {
        "pending",
        "running",
        "retrying",
        "succeeded",
        "failed",
        "paused",
        "escalated",
        "cancelled",
    }


def test_succeeded_failed_and_cancelled_are_terminal() -> None:
    assert {S.SUCCEEDED, S.FAILED, S.CANCELLED} == TERMINAL


@pytest.mark.parametrize(
    ("current", "wanted"),
    [
        (S.PENDING, S.RUNNING),
        (S.RUNNING, S.RETRYING),
        (S.RETRYING, S.RUNNING),
        (S.RUNNING, S.SUCCEEDED),
        (S.RUNNING, S.PAUSED),
        (S.PAUSED, S.PENDING),
        (S.ESCALATED, S.PENDING),
    ],
)
def test_allowed_transitions_pass(current: TaskState, wanted: TaskState) -> None:
    assert transition(current, wanted) is wanted


@pytest.mark.parametrize(
    ("current", "wanted"),
    [
        (S.SUCCEEDED, S.RUNNING),
        (S.FAILED, S.PENDING),
        (S.PENDING, S.SUCCEEDED),
        (S.RETRYING, S.SUCCEEDED),
        (S.CANCELLED, S.RUNNING),
    ],
)
def test_other_transitions_are_refused_with_the_allowed_ones_named(
    current: TaskState, wanted: TaskState
) -> None:
    with pytest.raises(InvalidTransition, match=f"cannot go from {current} to {wanted}"):
        transition(current, wanted)


def test_every_state_is_reachable_from_pending() -> None:
    seen = {S.PENDING}
    frontier = [S.PENDING]
    while frontier:
        for nxt in TRANSITIONS[frontier.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    assert seen == set(TaskState)


def test_a_retryable_failure_with_attempts_left_retries() -> None:
    outcome = outcome_for(Failure(code="ERR_HTTP_529_OVERLOADED"), will_retry=True)
    assert outcome.state is S.RETRYING


def test_retries_exhausted_fail_the_task() -> None:
    outcome = outcome_for(Failure(code="ERR_HTTP_529_OVERLOADED"), will_retry=False)
    assert (outcome.state, outcome.escalate) == (S.FAILED, False)


def test_context_limit_fails_with_its_reason() -> None:
    outcome = outcome_for(Failure(code="ERR_LLM_CONTEXT_LENGTH"), will_retry=False)
    assert (outcome.state, outcome.reason) == (S.FAILED, "context_limit exceeded")


def test_content_policy_fails_and_escalates() -> None:
    outcome = outcome_for(Failure(code="ERR_LLM_CONTENT_FILTER"), will_retry=False)
    assert (outcome.state, outcome.escalate) == (S.FAILED, True)


def test_quota_pauses_and_escalates_with_its_reset() -> None:
    resets = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    failure = Failure(code="ERR_LLM_DAILY_QUOTA", resets_at=resets)
    outcome = outcome_for(failure, will_retry=False)
    assert (outcome.state, outcome.escalate) == (S.PAUSED, True)
    assert resets.isoformat() in outcome.reason


def test_auth_fails_and_escalates() -> None:
    outcome = outcome_for(Failure(code="ERR_HTTP_401_UNAUTHORIZED"), will_retry=False)
    assert (outcome.state, outcome.escalate) == (S.FAILED, True)


def test_cancellation_cancels_and_never_retries() -> None:
    outcome = outcome_for(Failure(code="ERR_CANCELLED"), will_retry=True)
    assert outcome.state is S.CANCELLED


def test_security_violation_fails_and_escalates() -> None:
    outcome = outcome_for(Failure(code="ERR_SECURITY_VIOLATION"), will_retry=False)
    assert (outcome.state, outcome.escalate) == (S.FAILED, True)
