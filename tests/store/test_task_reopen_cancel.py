"""``TaskStore.reopen`` and ``TaskStore.cancel`` (an operator's retry and cancel) over
both task stores, SQLite and a real Redis: what each moves, what it refuses, and that a
refusal records nothing."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.engine.support import WALL, spec

from backstay.engine import AttemptOutcome, EscalationStatus, InvalidTransition, ResolveAction
from backstay.engine import TaskState as S
from backstay.engine.records import AttemptEnd, NewEscalation, StateChange
from backstay.engine.taskstore import TaskStore
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.tasks import RedisTaskStore
from backstay.store.sqlite.tasks import SQLiteTaskStore

OP = "wf:t1:run_01"
LATER = WALL + dt.timedelta(seconds=5)
REOPEN = StateChange(state=S.PENDING, reason="retried", at=LATER, new_budget=True)
CANCEL = StateChange(state=S.CANCELLED, reason="cancelled by operator", at=LATER)


@pytest.fixture(params=["sqlite", "redis"])
def tasks(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TaskStore]:
    if request.param == "sqlite":
        with SQLiteTaskStore(tmp_path / "state") as opened:
            opened.register(spec(tmp_path), at=WALL)
            yield opened
        return
    location: StoreLocation = request.getfixturevalue("redis_location")
    conn = RedisConnection(location)
    try:
        store = RedisTaskStore(conn)
        store.register(spec(tmp_path), at=WALL)
        yield store
    finally:
        conn.close()


def _run_and_fail(tasks: TaskStore, state: S = S.FAILED, *, escalate: bool = False) -> None:
    tasks.begin_attempt(OP, number=1, attempt_id=f"{OP}:attempt_1", output_dir="d", at=WALL)
    failure = Failure(code="ERR_LLM_CONTENT_FILTER")
    end = AttemptEnd(number=1, outcome=AttemptOutcome.FAILED, ended_at=WALL, failure=failure)
    escalation = NewEscalation(failure=failure, context={}) if escalate else None
    change = StateChange(state=state, reason="failed", at=WALL)
    tasks.end_attempt(OP, end, change, escalation=escalation)


def test_a_failed_task_reopens_to_pending_with_a_new_budget(tasks: TaskStore) -> None:
    _run_and_fail(tasks)
    record = tasks.reopen(OP, REOPEN)
    assert (record.state, record.reason, record.attempts_used, record.budget_base) == (
        S.PENDING,
        "retried",
        1,
        1,
    )


def test_a_reopen_can_replace_the_spec(tasks: TaskStore, tmp_path: Path) -> None:
    _run_and_fail(tasks)
    tasks.reopen(OP, REOPEN, spec=spec(tmp_path, prompt="do it better"))
    record = tasks.task(OP)
    assert record is not None
    assert record.spec.prompt == "do it better"


def test_a_spec_of_another_task_is_refused_and_nothing_moves(
    tasks: TaskStore, tmp_path: Path
) -> None:
    _run_and_fail(tasks)
    with pytest.raises(ConfigError, match="not the task"):
        tasks.reopen(OP, REOPEN, spec=spec(tmp_path, task_id="other"))
    record = tasks.task(OP)
    assert record is not None
    assert record.state is S.FAILED


@pytest.mark.parametrize("state", [S.PENDING, S.RUNNING])
def test_only_a_failed_or_cancelled_task_reopens(tasks: TaskStore, state: S) -> None:
    if state is S.RUNNING:
        tasks.begin_attempt(OP, number=1, attempt_id=f"{OP}:attempt_1", output_dir="d", at=WALL)
    with pytest.raises(InvalidTransition):
        tasks.reopen(OP, REOPEN)
    record = tasks.task(OP)
    assert record is not None
    assert record.state is state


def test_a_succeeded_task_never_reopens(tasks: TaskStore) -> None:
    tasks.begin_attempt(OP, number=1, attempt_id=f"{OP}:attempt_1", output_dir="d", at=WALL)
    end = AttemptEnd(number=1, outcome=AttemptOutcome.SUCCEEDED, ended_at=WALL)
    tasks.end_attempt(OP, end, StateChange(state=S.SUCCEEDED, reason="ok", at=WALL, result={}))
    with pytest.raises(InvalidTransition, match="from succeeded"):
        tasks.reopen(OP, REOPEN)


def test_cancelling_a_running_task_interrupts_its_attempt(tasks: TaskStore) -> None:
    tasks.begin_attempt(OP, number=1, attempt_id=f"{OP}:attempt_1", output_dir="d", at=WALL)
    record = tasks.cancel(OP, CANCEL)
    assert (record.state, record.reason) == (S.CANCELLED, "cancelled by operator")
    (attempt,) = tasks.attempts(OP)
    assert (attempt.outcome, attempt.ended_at) == (AttemptOutcome.INTERRUPTED, LATER)


def test_cancelling_an_escalated_task_closes_its_escalation(tasks: TaskStore) -> None:
    _run_and_fail(tasks, S.ESCALATED, escalate=True)
    tasks.cancel(OP, CANCEL)
    (item,) = tasks.escalations()
    assert (item.status, item.action, item.resolved_by) == (
        EscalationStatus.RESOLVED,
        ResolveAction.SKIP,
        "operator",
    )


def test_a_finished_task_is_not_cancelled(tasks: TaskStore) -> None:
    _run_and_fail(tasks)
    with pytest.raises(InvalidTransition, match="from failed"):
        tasks.cancel(OP, CANCEL)


def test_a_cancelled_task_reopens(tasks: TaskStore) -> None:
    tasks.cancel(OP, CANCEL)
    assert tasks.reopen(OP, REOPEN).state is S.PENDING
