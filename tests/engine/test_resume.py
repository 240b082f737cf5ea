"""Resume: how stored tasks are taken up again — the pure rules, then the engine."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from tests.engine.support import OK, WALL, ScriptedAdapter, clock, engine, spec

from backstay.engine import (
    AttemptOutcome,
    EscalationStatus,
    StartStep,
    TaskRecord,
    TaskState,
    plan_start,
)
from backstay.engine.records import AttemptEnd, StateChange
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.idempotency.records import Acquired
from backstay.idempotency.settings import GuardSettings
from backstay.store import SQLiteTaskStore
from backstay.testing import capture_events

OP = "wf:t1:run_01"
S = TaskState
HOUR = dt.timedelta(hours=1)


def _record(tmp_path: Path, state: TaskState, next_run_at: dt.datetime | None = None) -> TaskRecord:
    return TaskRecord(
        spec=spec(tmp_path),
        state=state,
        reason="",
        attempts_used=1,
        budget_base=0,
        next_run_at=next_run_at,
        result=None,
        created_at=WALL,
        updated_at=WALL,
    )


@pytest.mark.parametrize(
    ("state", "next_run_at", "step"),
    [
        (S.SUCCEEDED, None, StartStep.SKIP),
        (S.FAILED, None, StartStep.SKIP),
        (S.CANCELLED, None, StartStep.SKIP),
        (S.ESCALATED, None, StartStep.SKIP),
        (S.PAUSED, None, StartStep.SKIP),
        (S.PAUSED, WALL + HOUR, StartStep.SKIP),
        (S.PAUSED, WALL - HOUR, StartStep.REQUEUE),
        (S.PAUSED, WALL, StartStep.REQUEUE),
        (S.RUNNING, None, StartStep.RECOVER),
        (S.RETRYING, None, StartStep.RUN),
        (S.PENDING, None, StartStep.RUN),
    ],
)
def test_each_stored_state_has_its_step(
    tmp_path: Path, state: TaskState, next_run_at: dt.datetime | None, step: StartStep
) -> None:
    assert plan_start(_record(tmp_path, state, next_run_at), WALL).step is step


def test_a_retrying_task_waits_what_is_left_of_its_delay(tmp_path: Path) -> None:
    record = _record(tmp_path, S.RETRYING, WALL + dt.timedelta(seconds=10))
    plan = plan_start(record, WALL + dt.timedelta(seconds=4))
    assert (plan.step, plan.wait_s) == (StartStep.RUN, 6.0)


def _interrupted(store: SQLiteTaskStore, tmp_path: Path) -> None:
    """The task as a runner killed during its first attempt left it."""
    store.register(spec(tmp_path), at=WALL)
    store.begin_attempt(OP, number=1, attempt_id=f"{OP}:attempt_1", output_dir="x", at=WALL)


def test_an_interrupted_task_is_retried_with_its_operation_id_and_next_attempt(
    tmp_path: Path,
) -> None:
    adapter = ScriptedAdapter()
    with engine(tmp_path, adapter) as eng:
        _interrupted(eng.store, tmp_path)
        summary = eng.resume_sync()
        attempts = eng.store.attempts(OP)
    assert [c.attempt_id for c in adapter.calls] == [f"{OP}:attempt_2"]
    assert [a.outcome for a in attempts] == [AttemptOutcome.INTERRUPTED, AttemptOutcome.SUCCEEDED]
    assert summary.count(S.SUCCEEDED) == 1


def test_an_interrupted_task_keeps_its_retry_count(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_HTTP_500_INTERNAL")]})
    with engine(tmp_path, adapter) as eng:
        _interrupted(eng.store, tmp_path)
        eng.resume_sync()
        record = eng.store.task(OP)
    assert record is not None
    assert (record.state, record.attempts_used, len(adapter.calls)) == (S.FAILED, 4, 3)


def test_a_task_that_died_during_its_retry_delay_waits_the_rest(tmp_path: Path) -> None:
    fake = clock()
    with engine(tmp_path, ScriptedAdapter(), fake=fake) as eng:
        _interrupted(eng.store, tmp_path)
        end = AttemptEnd(number=1, outcome=AttemptOutcome.FAILED, ended_at=WALL, delay_s=10.0)
        later = WALL + dt.timedelta(seconds=10)
        eng.store.end_attempt(
            OP, end, StateChange(state=S.RETRYING, reason="r", at=WALL, next_run_at=later)
        )
        fake.advance(4.0)
        eng.resume_sync()
    assert fake.sleeps == [6.0]


def test_a_paused_task_resumes_by_itself_once_its_reset_passed(tmp_path: Path) -> None:
    fake = clock()
    quota = Failure(code="ERR_LLM_DAILY_QUOTA", resets_at=WALL + HOUR)
    adapter = ScriptedAdapter({"t1": [quota, OK]})
    with engine(tmp_path, adapter, fake=fake) as eng:
        eng.run_sync([spec(tmp_path)])
        before = eng.resume_sync()
        fake.advance(HOUR.total_seconds() + 1)
        after = eng.resume_sync()
        (escalation,) = eng.escalations.list(include_resolved=True)
    assert (before.count(S.PAUSED), after.count(S.SUCCEEDED), len(adapter.calls)) == (1, 1, 2)
    assert escalation.status is EscalationStatus.RESOLVED


def test_a_paused_task_is_not_dispatched_before_its_reset(tmp_path: Path) -> None:
    quota = Failure(code="ERR_LLM_DAILY_QUOTA", resets_at=WALL + HOUR)
    adapter = ScriptedAdapter({"t1": [quota, OK]})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
        eng.run_sync([spec(tmp_path)])
    assert len(adapter.calls) == 1


def test_taking_a_task_up_again_emits_task_resumed(tmp_path: Path) -> None:
    with engine(tmp_path, ScriptedAdapter()) as eng:
        _interrupted(eng.store, tmp_path)
        with capture_events() as events:
            eng.resume_sync()
    (event,) = events.named("task.resumed")
    assert event.to_dict()["previous_state"] == "running"


def test_resume_covers_every_task_in_the_state_directory(tmp_path: Path) -> None:
    adapter = ScriptedAdapter()
    with engine(tmp_path, adapter) as eng:
        for task_id in ("a", "b"):
            eng.store.register(spec(tmp_path, task_id), at=WALL)
        summary = eng.resume_sync()
    assert (summary.count(S.SUCCEEDED), len(adapter.calls)) == (2, 2)


def test_a_task_another_runner_holds_is_left_to_it(tmp_path: Path) -> None:
    adapter = ScriptedAdapter()
    settings = GuardSettings(wait_timeout_s=0.0)
    with engine(tmp_path, adapter, guard_settings=settings) as eng:
        _interrupted(eng.store, tmp_path)
        assert isinstance(eng.operations.claim(OP, "other-runner", 600.0), Acquired)
        summary = eng.resume_sync()
    assert (summary.count(S.RUNNING), adapter.calls) == (1, [])


def test_a_task_whose_secret_is_missing_is_refused_before_anything_runs(tmp_path: Path) -> None:
    adapter = ScriptedAdapter()
    with engine(tmp_path, adapter) as eng:
        eng.store.register(spec(tmp_path, env={"API_KEY": "k"}), at=WALL)
        with pytest.raises(ConfigError, match="API_KEY"):
            eng.resume_sync()
    assert adapter.calls == []


def test_a_secret_given_to_the_engine_lets_the_task_resume(tmp_path: Path) -> None:
    adapter = ScriptedAdapter()
    with engine(tmp_path, adapter) as eng:
        eng.store.register(spec(tmp_path, env={"API_KEY": "k"}), at=WALL)
    with engine(tmp_path, adapter, env={"API_KEY": "k2"}) as again:
        again.resume_sync()
    assert len(adapter.calls) == 1
