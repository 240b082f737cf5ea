"""The ``TaskStore`` contract, one behaviour per test, over every backend: SQLite and Redis
(there is no memory one). What ``status``, ``resume`` and ``report`` rely on: records,
reads, moves checked against the state machine, escalations, recovery. The Redis Cluster
runs these again (tests/store/redis/test_cluster_tasks.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.engine.support import WALL, spec

from backstay.adapters.usage import Usage
from backstay.engine import (
    AttemptOutcome,
    EscalationStatus,
    InvalidTransition,
    ResolveAction,
    TaskState,
)
from backstay.engine.records import AttemptEnd, NewEscalation, StateChange
from backstay.engine.taskstore import TaskStore
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.tasks import RedisTaskStore
from backstay.store.sqlite.tasks import SQLiteTaskStore

OP = "wf:t1:run_01"
S = TaskState
LATER = WALL + dt.timedelta(seconds=5)


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TaskStore]:
    if request.param == "sqlite":
        with SQLiteTaskStore(tmp_path / "state") as opened:
            opened.register(spec(tmp_path), at=WALL)
            yield opened
        return
    location: StoreLocation = request.getfixturevalue("redis_location")
    conn = RedisConnection(location)
    try:
        redis_store = RedisTaskStore(conn)
        redis_store.register(spec(tmp_path), at=WALL)
        yield redis_store
    finally:
        conn.close()


def test_it_is_a_task_store(store: TaskStore) -> None:
    assert isinstance(store, TaskStore)


def _begin(store: TaskStore, number: int = 1) -> None:
    store.begin_attempt(
        OP, number=number, attempt_id=f"{OP}:attempt_{number}", output_dir="d", at=WALL
    )


def _fail(
    store: TaskStore,
    failure: Failure,
    state: TaskState,
    escalation: NewEscalation | None = None,
) -> None:
    end = AttemptEnd(
        number=1, outcome=AttemptOutcome.FAILED, ended_at=LATER, failure=failure, delay_s=2.5
    )
    change = StateChange(state=state, reason="r", at=LATER)
    store.end_attempt(OP, end, change, escalation=escalation)


def test_a_registered_task_is_pending_with_no_attempts(store: TaskStore) -> None:
    record = store.task(OP)
    assert record is not None
    assert (record.state, record.attempts_used, record.created_at) == (S.PENDING, 0, WALL)


def test_registering_a_known_task_again_keeps_its_state(store: TaskStore, tmp_path: Path) -> None:
    _begin(store)
    again = store.register(spec(tmp_path, model="other"), at=LATER)
    assert (again.state, again.attempts_used, again.spec.model) == (S.RUNNING, 1, "other")


def test_tasks_come_back_in_registration_order(store: TaskStore, tmp_path: Path) -> None:
    for task_id in ("c", "a", "b"):
        store.register(spec(tmp_path, task_id), at=WALL)
    assert [t.task_id for t in store.tasks()] == ["t1", "c", "a", "b"]


def test_beginning_an_attempt_records_it_running_before_anything_else(
    store: TaskStore,
) -> None:
    _begin(store)
    (attempt,) = store.attempts(OP)
    record = store.task(OP)
    assert record is not None
    assert (record.state, record.attempts_used) == (S.RUNNING, 1)
    assert (attempt.number, attempt.outcome, attempt.ended_at) == (1, AttemptOutcome.RUNNING, None)


def test_an_attempt_number_that_is_not_the_next_is_refused(store: TaskStore) -> None:
    with pytest.raises(ConfigError, match="not the next one"):
        _begin(store, number=2)


def test_an_attempt_end_keeps_the_failure_losslessly(store: TaskStore) -> None:
    failure = Failure(
        code="ERR_HTTP_429_RATE_LIMITED",
        message="slow down",
        retry_after_s=2.0,
        resets_at=LATER,
        provider="anthropic",
        status=429,
        details={"header": "retry-after"},
    )
    _begin(store)
    _fail(store, failure, S.RETRYING)
    (attempt,) = store.attempts(OP)
    assert (attempt.failure, attempt.delay_s, attempt.ended_at) == (failure, 2.5, LATER)


def test_an_attempt_end_keeps_its_usage(store: TaskStore) -> None:
    usage = Usage(input_tokens=5, output_tokens=2, cost_usd=0.5, api_calls=1)
    _begin(store)
    end = AttemptEnd(number=1, outcome=AttemptOutcome.SUCCEEDED, ended_at=LATER, usage=usage)
    store.end_attempt(OP, end, StateChange(state=S.SUCCEEDED, reason="ok", at=LATER))
    assert store.attempts(OP)[0].usage == usage


def test_a_move_the_state_machine_refuses_records_nothing(store: TaskStore) -> None:
    _begin(store)
    end = AttemptEnd(number=1, outcome=AttemptOutcome.FAILED, ended_at=LATER)
    with pytest.raises(InvalidTransition):
        store.end_attempt(OP, end, StateChange(state=S.PENDING, reason="no", at=LATER))
    assert store.attempts(OP)[0].outcome is AttemptOutcome.RUNNING
    record = store.task(OP)
    assert record is not None
    assert record.state is S.RUNNING


def test_an_escalation_is_recorded_with_its_attempt_and_its_context_redacted(
    store: TaskStore,
) -> None:
    failure = Failure(code="ERR_LLM_CONTENT_FILTER")
    context = {"partial_output": "key sk-ant-api03-Secret0123456789abcdefABCDEF"}
    _begin(store)
    _fail(store, failure, S.ESCALATED, escalation=NewEscalation(failure=failure, context=context))
    (escalation,) = store.escalations()
    assert (escalation.task_id, escalation.status) == ("t1", EscalationStatus.OPEN)
    assert "Secret0123456789" not in escalation.context["partial_output"]


def test_an_interrupted_task_keeps_its_attempt_count_and_goes_to_retrying(
    store: TaskStore,
) -> None:
    _begin(store)
    record = store.recover_interrupted(OP, at=LATER)
    assert (record.state, record.attempts_used, record.next_run_at) == (S.RETRYING, 1, LATER)
    assert store.attempts(OP)[0].outcome is AttemptOutcome.INTERRUPTED


def test_only_a_running_task_can_be_recovered(store: TaskStore) -> None:
    with pytest.raises(InvalidTransition):
        store.recover_interrupted(OP, at=LATER)


def test_a_requeue_can_close_the_tasks_open_escalations(store: TaskStore) -> None:
    failure = Failure(code="ERR_LLM_DAILY_QUOTA")
    _begin(store)
    _fail(store, failure, S.PAUSED, escalation=NewEscalation(failure=failure, context={}))
    change = StateChange(state=S.PENDING, reason="reset passed", at=LATER)
    store.change_state(OP, change, close_escalations="reset passed")
    (escalation,) = store.escalations()
    assert (escalation.status, escalation.action, escalation.resolved_by) == (
        EscalationStatus.RESOLVED,
        ResolveAction.RESUME,
        "engine",
    )


def test_resolving_an_unknown_escalation_is_refused(store: TaskStore) -> None:
    change = StateChange(state=S.PENDING, reason="r", at=LATER)
    with pytest.raises(ConfigError, match="no escalation 9"):
        store.resolve(9, action=ResolveAction.RETRY, note="", by="me", change=change)


def test_a_new_budget_starts_after_the_attempts_made(store: TaskStore) -> None:
    _begin(store)
    _fail(store, Failure(code="ERR_LLM_DAILY_QUOTA"), S.PAUSED)
    change = StateChange(state=S.PENDING, reason="human", at=LATER, new_budget=True)
    assert store.change_state(OP, change).budget_base == 1


def test_an_unknown_task_is_named(store: TaskStore) -> None:
    with pytest.raises(ConfigError, match="no task 'wf:zz:run_01'"):
        store.change_state("wf:zz:run_01", StateChange(state=S.RUNNING, reason="r", at=LATER))
