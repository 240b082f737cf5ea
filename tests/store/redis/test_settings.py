"""``check_server``: the settings backstay needs, read from a real Redis and from every
node of a real Redis Cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from tests.redis_server import RedisServer, start_redis

from backstay.store.location import StoreLocation, parse_store
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.settings import check_server


@pytest.fixture
def durable(redis_server: RedisServer) -> Iterator[StoreLocation]:
    """A server of its own with every needed setting (stopped by its PID after the test)."""
    del redis_server  # only to skip the test where redis-server is missing
    server = start_redis("--appendonly", "yes", "--appendfsync", "everysec")
    try:
        yield parse_store(f"{server.url}?namespace=s")
    finally:
        server.stop()


def _warnings(location: StoreLocation) -> tuple[str, ...]:
    conn = RedisConnection(location)
    try:
        return check_server(conn)
    finally:
        conn.close()


def test_a_server_set_as_needed_gives_no_warning(durable: StoreLocation) -> None:
    assert _warnings(durable) == ()


def test_a_server_without_the_append_only_file_is_warned_about(
    redis_location: StoreLocation,
) -> None:
    (warning,) = _warnings(redis_location)
    assert "appendonly is no, not yes" in warning
    assert "node" not in warning


def test_every_node_of_a_cluster_is_checked(cluster_location: StoreLocation) -> None:
    (warning,) = _warnings(cluster_location)
    assert "appendonly is no on every node, not yes" in warning


def test_a_cluster_node_with_an_evicting_policy_is_named(
    cluster_location: StoreLocation, redis_cluster: list[RedisServer]
) -> None:
    last = redis_cluster[-1]
    client = redis.Redis(port=last.port)
    client.config_set("maxmemory-policy", "allkeys-lru")
    try:
        found = _warnings(cluster_location)
    finally:
        client.config_set("maxmemory-policy", "noeviction")
        client.close()
    evicting = [w for w in found if "maxmemory-policy" in w]
    assert evicting == [
        f"{cluster_location.display}: maxmemory-policy is allkeys-lru on node "
        f"127.0.0.1:{last.port}, not noeviction: Redis may evict leases, results and task "
        "records under memory pressure, and evicted work runs again (redis-cli CONFIG SET "
        "maxmemory-policy noeviction, and in redis.conf)"
    ]
