"""RedisTaskStore beyond the shared contract (tests/store/test_task_store.py): what only a
shared store adds (another process's store sees every record). Its fixtures are the ones
the cluster tests run the contract with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.engine.support import WALL, spec
from tests.store import test_task_store as contract

from backstay.engine import AttemptOutcome, ResolveAction, TaskState
from backstay.engine.records import AttemptEnd, NewEscalation, StateChange
from backstay.failure import Failure
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.tasks import RedisTaskStore

OP = contract.OP
LATER = contract.LATER


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
