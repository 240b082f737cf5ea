"""next_step: a failed attempt's next state, decided purely from the stored attempts."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest
from tests.engine.support import QUICK, WALL, ScriptedAdapter, engine, spec

from backstay.engine import AttemptOutcome, AttemptRecord, TaskRecord, TaskState
from backstay.engine.decision import NextStep, draw_for, next_step
from backstay.failure import Failure
from backstay.policy.retry import RetryPolicy

S = TaskState
SERVER = Failure(code="ERR_HTTP_500_INTERNAL")


def _record(tmp_path: Path, attempts_used: int, budget_base: int = 0) -> TaskRecord:
    return TaskRecord(
        spec=spec(tmp_path),
        state=S.RUNNING,
        reason="",
        attempts_used=attempts_used,
        budget_base=budget_base,
        next_run_at=None,
        result=None,
        created_at=WALL,
        updated_at=WALL,
    )


def _attempt(number: int, *, delay_s: float | None = None, at: dt.datetime = WALL) -> AttemptRecord:
    return AttemptRecord(
        operation_id="wf:t1:run_01",
        number=number,
        attempt_id=f"wf:t1:run_01:attempt_{number}",
        output_dir="d",
        started_at=at,
        outcome=AttemptOutcome.FAILED,
        delay_s=delay_s,
    )


def _step(
    tmp_path: Path,
    failure: Failure,
    used: int = 1,
    base: int = 0,
    *,
    attempts: list[AttemptRecord] | None = None,
    policy: RetryPolicy = QUICK,
) -> NextStep:
    return next_step(
        policy,
        failure,
        record=_record(tmp_path, used, base),
        attempts=[_attempt(n) for n in range(1, used + 1)] if attempts is None else attempts,
        ended_at=WALL,
        draw=0.5,
    )


def test_a_retryable_failure_retries_at_the_end_plus_the_delay(tmp_path: Path) -> None:
    step = _step(tmp_path, SERVER)
    assert (step.state, step.delay_s, step.next_run_at) == (
        S.RETRYING,
        1.0,
        WALL + dt.timedelta(seconds=1),
    )


def test_attempts_exhausted_fail_with_the_reason_named(tmp_path: Path) -> None:
    step = _step(tmp_path, SERVER, used=4)
    assert (step.state, step.reason, step.delay_s) == (
        S.FAILED,
        "server_error: ERR_HTTP_500_INTERNAL (attempts_exhausted)",
        None,
    )


def test_attempts_before_the_budget_began_do_not_count(tmp_path: Path) -> None:
    assert _step(tmp_path, SERVER, used=4, base=3).state is S.RETRYING


def test_the_delay_grows_from_the_previous_recorded_delay(tmp_path: Path) -> None:
    policy = QUICK.derive(jitter_mode="decorrelated", max_delay_s=100.0)
    attempts = [_attempt(1, delay_s=30.0), _attempt(2)]
    step = _step(tmp_path, SERVER, used=2, attempts=attempts, policy=policy)
    assert step.delay_s == pytest.approx(1.0 + 0.5 * (3 * 30.0 - 1.0))


def test_the_deadline_counts_from_the_budgets_first_attempt(tmp_path: Path) -> None:
    policy = QUICK.derive(deadline_s=60.0)
    attempts = [_attempt(1, at=WALL - dt.timedelta(seconds=100)), _attempt(2)]
    step = _step(tmp_path, SERVER, used=2, attempts=attempts, policy=policy)
    assert (step.state, step.reason.endswith("(deadline)")) == (S.FAILED, True)


def test_a_content_policy_failure_fails_with_an_escalation_for_review(tmp_path: Path) -> None:
    # The adapter reliability contract's table: content_policy → "FAILED + HIL escalation".
    step = _step(tmp_path, Failure(code="ERR_LLM_CONTENT_FILTER"))
    assert (step.state, step.escalate) == (S.FAILED, True)


def test_an_auth_failure_waits_for_a_human(tmp_path: Path) -> None:
    step = _step(tmp_path, Failure(code="ERR_AUTH_INVALID_KEY"))
    assert (step.state, step.escalate) == (S.ESCALATED, True)


def test_a_quota_pauses_until_its_reset(tmp_path: Path) -> None:
    resets = WALL + dt.timedelta(hours=2)
    step = _step(tmp_path, Failure(code="ERR_LLM_DAILY_QUOTA", resets_at=resets))
    assert (step.state, step.next_run_at, step.escalate) == (S.PAUSED, resets, True)


def test_a_context_overflow_fails_with_the_contract_reason(tmp_path: Path) -> None:
    step = _step(tmp_path, Failure(code="ERR_LLM_CONTEXT_LENGTH"))
    assert (step.state, step.reason) == (S.FAILED, "context_limit exceeded")


def test_a_seeded_policy_draws_the_same_jitter_every_time() -> None:
    policy = dataclasses.replace(QUICK, seed=7)
    assert draw_for(policy, "wf:t1:run_01", 2) == draw_for(policy, "wf:t1:run_01", 2)


@pytest.mark.parametrize("policy", [RetryPolicy(name="p", max_attempts=1)])
def test_a_policy_without_retries_fails_at_once(tmp_path: Path, policy: RetryPolicy) -> None:
    assert _step(tmp_path, SERVER, policy=policy).state is S.FAILED


def test_attempts_run_out_escalate_when_the_policy_says_so(tmp_path: Path) -> None:
    policy = QUICK.derive(escalate_on_exhaustion=True)
    server = Failure(code="ERR_HTTP_500_INTERNAL")
    adapter = ScriptedAdapter({"t1": [server] * policy.max_attempts})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path, policy=policy)])
        (record,) = eng.store.tasks()
        assert record.state is TaskState.ESCALATED
        assert "retries exhausted" in record.reason
        assert len(eng.escalations.list()) == 1


def test_attempts_run_out_fail_by_default(tmp_path: Path) -> None:
    server = Failure(code="ERR_HTTP_500_INTERNAL")
    adapter = ScriptedAdapter({"t1": [server] * QUICK.max_attempts})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
        (record,) = eng.store.tasks()
        assert record.state is TaskState.FAILED
