"""The task store on a Redis Cluster: every behaviour test of ``test_task_store.py`` and
``redis/test_tasks.py`` (records, reads, moves, escalations, recovery: what ``status``,
``resume`` and ``report`` rely on) run again with ``redis_location`` a namespace on the
real three-node cluster. A task's
keys share the hash tag ``{ns:tasks}``: each move is one transaction on one node."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import pytest
from tests.engine.support import WALL
from tests.redis_cluster import behaviours, run_with_fixtures
from tests.store import test_task_store as contract
from tests.store.redis import test_tasks as tasks

from backstay.engine import AttemptOutcome, TaskState
from backstay.engine.records import AttemptEnd, NewEscalation, StateChange
from backstay.failure import Failure
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection, is_cluster
from backstay.store.redis.tasks import RedisTaskStore

# The fixtures of ``test_tasks.py``, here made on the cluster (``redis_location`` below).
conn = tasks.conn
store = tasks.store
OP: Final = tasks.OP
LATER: Final = tasks.LATER
TASKS: Final = behaviours(
    contract, [name for name in dir(contract) if name.startswith("test_")]
) + behaviours(tasks, [name for name in dir(tasks) if name.startswith("test_")])


@pytest.fixture
def redis_location(cluster_location: StoreLocation) -> StoreLocation:
    return cluster_location


def test_the_fixtures_connect_to_the_cluster(conn: RedisConnection) -> None:
    assert is_cluster(conn.client)


def test_a_tasks_records_and_escalations_share_one_slot(
    store: RedisTaskStore, conn: RedisConnection, redis_location: StoreLocation
) -> None:
    failure = Failure(code="ERR_LLM_CONTENT_FILTER")
    store.begin_attempt(OP, number=1, attempt_id=f"{OP}:attempt_1", output_dir="d", at=WALL)
    end = AttemptEnd(number=1, outcome=AttemptOutcome.FAILED, ended_at=LATER, failure=failure)
    change = StateChange(state=TaskState.ESCALATED, reason="r", at=LATER)
    store.end_attempt(OP, end, change, escalation=NewEscalation(failure=failure, context={}))
    client: Any = conn.client
    keys = list(client.scan_iter(f"{{{redis_location.namespace}:tasks}}:*"))
    # order, the task, its attempts, attempt-order, esc, esc-seq, and the index: counts,
    # in:escalated (the sets of the states it left are empty, so gone), its version
    assert len(keys) == 9
    assert len({client.keyslot(key) for key in keys}) == 1


@pytest.mark.parametrize("behaviour", TASKS)
def test_the_task_store_behaves_on_a_cluster(
    behaviour: Callable[..., None], request: pytest.FixtureRequest
) -> None:
    run_with_fixtures(behaviour, request)
