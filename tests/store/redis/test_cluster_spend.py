"""The spend ledger on a Redis Cluster: every behaviour test of ``test_spend_ledger.py``
and ``redis/test_spend.py`` (reserving against batch, tenant and task budgets, settling,
releasing, charging a dead runner's reservations, estimating from earlier use, the running
sums ``{ns:spend}:sums`` against the SQLite ledger's rows, and rebuilding them) run again
with ``redis_location`` a namespace on the real three-node cluster. The ledger's keys
share the hash tag ``{ns:spend}``: each reservation is one transaction on one node."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import pytest
from tests.redis_cluster import behaviours, run_with_fixtures
from tests.store import test_spend_ledger as contract
from tests.store.redis import test_spend as spend

from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection, is_cluster
from backstay.store.redis.spend import RedisSpendLedger

# ``redis/test_spend.py``'s ledgers, here on the cluster (``redis_location`` below).
open_ledger = spend.open_ledger
SPEND: Final = behaviours(
    contract, [name for name in dir(contract) if name.startswith("test_")]
) + behaviours(spend, [name for name in dir(spend) if name.startswith("test_")])


@pytest.fixture
def redis_location(cluster_location: StoreLocation) -> StoreLocation:
    return cluster_location


def test_the_ledgers_keys_are_on_one_node_of_the_cluster(redis_location: StoreLocation) -> None:
    conn = RedisConnection(redis_location)
    try:
        assert is_cluster(conn.client)
        client: Any = conn.client
        ledger = RedisSpendLedger(conn)
        keys = [ledger._rows, ledger._sums, ledger._budgets]
        assert len({client.keyslot(key) for key in keys}) == 1
    finally:
        conn.close()


@pytest.mark.parametrize("behaviour", SPEND)
def test_the_spend_ledger_behaves_on_a_cluster(
    behaviour: Callable[..., None], request: pytest.FixtureRequest
) -> None:
    run_with_fixtures(behaviour, request)
