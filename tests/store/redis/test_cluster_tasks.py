"""The task store on a Redis Cluster: every behaviour test of ``test_tasks.py`` (records,
reads, moves, escalations, recovery: what ``status``, ``resume`` and ``report`` rely on)
run again with ``redis_location`` a namespace on the real three-node cluster. A task's
keys share the hash tag ``{ns:tasks}``: each move is one transaction on one node."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import pytest
from tests.store.redis import test_tasks as tasks
from tests.store.redis.test_cluster import behaviours

from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection, is_cluster

# The fixtures of ``test_tasks.py``, here made on the cluster (``redis_location`` below).
conn = tasks.conn
store = tasks.store
TASKS: Final = behaviours(tasks, [name for name in dir(tasks) if name.startswith("test_")])


@pytest.fixture
def redis_location(cluster_location: StoreLocation) -> StoreLocation:
    return cluster_location


def test_the_fixtures_connect_to_the_cluster(conn: RedisConnection) -> None:
    assert is_cluster(conn.client)


@pytest.mark.parametrize("behaviour", TASKS)
def test_the_task_store_behaves_on_a_cluster(
    behaviour: Callable[..., None], request: pytest.FixtureRequest
) -> None:
    code = behaviour.__code__
    given: dict[str, Any] = {
        name: request.getfixturevalue(name) for name in code.co_varnames[: code.co_argcount]
    }
    behaviour(**given)
