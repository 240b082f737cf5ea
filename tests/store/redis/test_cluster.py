"""The shared stores on a Redis Cluster (a store URL with ``?cluster=yes``): three real
``redis-server`` nodes in cluster mode on 127.0.0.1 (``tests/redis_cluster.py``, the
``cluster_location`` fixture of ``tests/conftest.py``). The behaviour tests of the shared rate
limiter, breaker store, leases and retry budget run against it unchanged: every script
and transaction touches the keys of one hash tag, one slot, one node."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any, Final

import pytest
from tests.redis_cluster import behaviours
from tests.store import test_breaker_store as breakers
from tests.store.redis import test_budget as budget
from tests.store.redis import test_limiter as limiter
from tests.store.redis import test_operations as operations

from backstay.breaker.store import BreakerStore
from backstay.policy.ratelimit import RateLimitSettings
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection, is_cluster
from backstay.store.redis.breakers import RedisBreakerStore
from backstay.store.redis.budget import RedisRetryBudget
from backstay.store.redis.limiter import RedisRateLimiter

LIMITER: Final = behaviours(
    limiter,
    [
        "test_a_full_bucket_admits_its_burst_at_once_then_paces",
        "test_two_handles_queue_in_one_line",
        "test_a_rate_limit_with_a_wait_blocks_every_handle",
        "test_limits_learned_from_headers_pace_every_handle",
        "test_headers_answering_a_reservation_set_the_level_even_upwards",
    ],
)
BREAKER: Final = behaviours(
    breakers,
    [
        "test_consecutive_failures_through_two_stores_trip_one_circuit",
        "test_a_failure_rate_counted_from_two_stores_trips_the_circuit",
        "test_a_probe_taken_through_one_store_is_taken_for_the_other",
        "test_a_probe_that_never_reports_is_given_again_after_its_lease",
    ],
)
LEASES: Final = behaviours(
    operations,
    [
        "test_leases_are_stamped_with_the_redis_clock",
        "test_a_lease_key_never_expires_on_its_own",
        "test_a_replayed_completion_gets_its_result_not_a_refusal",
        "test_a_replayed_claim_gets_the_lease_it_took",
        "test_get_reads_the_result_with_the_redis_clock",
    ],
)
BUDGET: Final = behaviours(
    budget,
    [
        "test_retries_are_at_most_the_ratio_of_calls_across_handles",
        "test_no_calls_and_no_floor_allow_no_retry",
    ],
)


@pytest.fixture
def connect(cluster_location: StoreLocation) -> Iterator[Callable[[], RedisConnection]]:
    """New connections to the cluster (each its own client), closed after the test."""
    with ExitStack() as stack:

        def new() -> RedisConnection:
            conn = RedisConnection(cluster_location)
            stack.callback(conn.close)
            return conn

        yield new


def test_a_cluster_location_opens_a_cluster_client(
    connect: Callable[[], RedisConnection],
) -> None:
    assert is_cluster(connect().client)


def test_the_stores_keys_spread_over_the_nodes_one_slot_per_hash_tag(
    connect: Callable[[], RedisConnection],
) -> None:
    conn = connect()
    client: Any = conn.client
    tags = [f"p{i}/m" for i in range(12)]
    for tag in tags:
        RedisRateLimiter(tag, conn, settings=RateLimitSettings(requests_per_minute=60)).reserve()
    keys = [RedisRateLimiter(tag, conn).key for tag in tags]
    nodes = {client.get_node_from_key(key).name for key in keys}
    assert len(nodes) > 1  # not all on one node: the cluster really routes them


@pytest.mark.parametrize("behaviour", LIMITER)
def test_the_shared_rate_limiter_behaves_on_a_cluster(
    behaviour: Callable[[limiter.Maker], None], connect: Callable[[], RedisConnection]
) -> None:
    def make(settings: RateLimitSettings) -> limiter.Limiter:
        return RedisRateLimiter("p/m", connect(), settings=settings)

    behaviour(make)


@pytest.mark.parametrize("behaviour", BREAKER)
def test_the_shared_breaker_behaves_on_a_cluster(
    behaviour: Callable[[breakers.Opener], None], connect: Callable[[], RedisConnection]
) -> None:
    def opener() -> BreakerStore:
        return RedisBreakerStore(connect())

    behaviour(opener)


@pytest.mark.parametrize("behaviour", LEASES)
def test_leases_behave_on_a_cluster(
    behaviour: Callable[..., None],
    connect: Callable[[], RedisConnection],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parameters = behaviour.__code__.co_varnames[: behaviour.__code__.co_argcount]
    given: dict[str, Any] = {"conn": connect()}
    if "monkeypatch" in parameters:
        given["monkeypatch"] = monkeypatch
    behaviour(**{name: given[name] for name in parameters})


@pytest.mark.parametrize("behaviour", BUDGET)
def test_the_shared_retry_budget_behaves_on_a_cluster(
    behaviour: Callable[[budget.Maker], None], connect: Callable[[], RedisConnection]
) -> None:
    behaviour(lambda: RedisRetryBudget("b", connect(), settings=budget.SETTINGS))
