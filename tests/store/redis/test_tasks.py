"""RedisTaskStore: the SQLite task store's behaviour tests, run against a real Redis, and
what only a shared store adds (another process's store sees every record)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.engine.support import WALL, spec
from tests.store.sqlite import test_tasks as shared

from backstay.engine import AttemptOutcome, ResolveAction, TaskState
from backstay.engine.records import AttemptEnd, NewEscalation, StateChange
from backstay.engine.taskstore import TaskStore
from backstay.failure import Failure
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.tasks import RedisTaskStore

OP = shared.OP
LATER = shared.LATER

# The behaviour tests of the SQLite store, collected here with the Redis ``store`` below.
test_a_registered_task_is_pending_with_no_attempts = (
    shared.test_a_registered_task_is_pending_with_no_attempts
)
test_registering_a_known_task_again_keeps_its_state = (
    shared.test_registering_a_known_task_again_keeps_its_state
)
test_tasks_come_back_in_registration_order = shared.test_tasks_come_back_in_registration_order
test_beginning_an_attempt_records_it_running_before_anything_else = (
    shared.test_beginning_an_attempt_records_it_running_before_anything_else
)
test_an_attempt_number_that_is_not_the_next_is_refused = (
    shared.test_an_attempt_number_that_is_not_the_next_is_refused
)
test_an_attempt_end_keeps_the_failure_losslessly = (
    shared.test_an_attempt_end_keeps_the_failure_losslessly
)
test_an_attempt_end_keeps_its_usage = shared.test_an_attempt_end_keeps_its_usage
test_a_move_the_state_machine_refuses_records_nothing = (
    shared.test_a_move_the_state_machine_refuses_records_nothing
)
test_an_escalation_is_recorded_with_its_attempt_and_its_context_redacted = (
    shared.test_an_escalation_is_recorded_with_its_attempt_and_its_context_redacted
)
test_an_interrupted_task_keeps_its_attempt_count_and_goes_to_retrying = (
    shared.test_an_interrupted_task_keeps_its_attempt_count_and_goes_to_retrying
)
test_only_a_running_task_can_be_recovered = shared.test_only_a_running_task_can_be_recovered
test_a_requeue_can_close_the_tasks_open_escalations = (
    shared.test_a_requeue_can_close_the_tasks_open_escalations
)
test_resolving_an_unknown_escalation_is_refused = (
    shared.test_resolving_an_unknown_escalation_is_refused
)
test_a_new_budget_starts_after_the_attempts_made = (
    shared.test_a_new_budget_starts_after_the_attempts_made
)
test_an_unknown_task_is_named = shared.test_an_unknown_task_is_named


@pytest.fixture
def conn(redis_location: StoreLocation) -> Iterator[RedisConnection]:
    opened = RedisConnection(redis_location)
    yield opened
    opened.close()


@pytest.fixture
def store(conn: RedisConnection, tmp_path: Path) -> RedisTaskStore:
    opened = RedisTaskStore(conn)
    opened.register(spec(tmp_path), at=WALL)
    return opened


def test_it_is_a_task_store(store: RedisTaskStore) -> None:
    assert isinstance(store, TaskStore)


def test_another_connection_sees_every_record(
    store: RedisTaskStore, redis_location: StoreLocation
) -> None:
    failure = Failure(code="ERR_LLM_DAILY_QUOTA")
    store.begin_attempt(OP, number=1, attempt_id=f"{OP}:attempt_1", output_dir="d", at=WALL)
    end = AttemptEnd(number=1, outcome=AttemptOutcome.FAILED, ended_at=LATER, failure=failure)
    change = StateChange(state=TaskState.ESCALATED, reason="r", at=LATER)
    store.end_attempt(OP, end, change, escalation=NewEscalation(failure=failure, context={}))
    other = RedisConnection(redis_location)
    try:
        again = RedisTaskStore(other)
        assert again.tasks() == store.tasks()
        assert again.attempts() == store.attempts() == store.attempts(OP)
        assert again.escalations(open_only=True) == store.escalations()
    finally:
        other.close()


def test_resolving_an_escalation_moves_the_task_with_it(store: RedisTaskStore) -> None:
    failure = Failure(code="ERR_LLM_CONTENT_FILTER")
    store.begin_attempt(OP, number=1, attempt_id=f"{OP}:attempt_1", output_dir="d", at=WALL)
    end = AttemptEnd(number=1, outcome=AttemptOutcome.FAILED, ended_at=LATER, failure=failure)
    change = StateChange(state=TaskState.ESCALATED, reason="r", at=LATER)
    _, opened = store.end_attempt(
        OP, end, change, escalation=NewEscalation(failure=failure, context={})
    )
    assert opened is not None
    retry = StateChange(state=TaskState.PENDING, reason="human: retry", at=LATER, new_budget=True)
    resolved, record = store.resolve(
        opened.escalation_id, action=ResolveAction.RETRY, note="ok", by="me", change=retry
    )
    assert (resolved.action, resolved.resolved_by, record.state) == (
        ResolveAction.RETRY,
        "me",
        TaskState.PENDING,
    )
    assert store.escalations(open_only=True) == ()


def test_a_secret_environment_value_is_never_written_to_redis(
    conn: RedisConnection, redis_location: StoreLocation, tmp_path: Path
) -> None:
    canary = "sk-ant-api03-CanaryRedisValue0123456789abcdef"
    secret_spec = spec(tmp_path, "t9", env={"ANTHROPIC_API_KEY": canary})
    RedisTaskStore(conn).register(secret_spec, at=WALL)
    dump = b"".join(
        conn.client.dump(key) or b""
        for key in conn.client.scan_iter(f"{{{redis_location.namespace}:*")
    )
    assert canary.encode() not in dump
