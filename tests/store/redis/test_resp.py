"""``RespClient``: the small RESP2 client ``backstay health`` reads Redis with, against a
real ``redis-server`` (replies of every kind, pipelines, replies larger than one read,
``AUTH`` and ``SELECT``, a refused connection), and which locations it leaves to redis-py."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Iterator

import pytest
import redis
from tests.redis_server import RedisServer, free_port, start_redis

from backstay.store.location import StoreLocation, StoreUnavailable, StoreUnreachable, parse_store
from backstay.store.redis._resp import RespClient, RespError, supports

CANARY = "s3cret-canary-7f1c"  # a password that must never be shown


@pytest.fixture
def client(redis_location: StoreLocation) -> Iterator[RespClient]:
    with RespClient(redis_location) as opened:
        yield opened


def test_replies_of_every_kind(client: RespClient, redis_location: StoreLocation) -> None:
    key = f"{redis_location.namespace}:kinds"
    replies = client.pipeline(
        [
            ["PING"],
            ["DEL", key, f"{key}:h", f"{key}:l"],
            ["SET", key, "välue\r\nwith a line break"],
            ["GET", key],
            ["GET", f"{key}:missing"],
            ["HSET", f"{key}:h", "a", "1", "b", ""],
            ["HGETALL", f"{key}:h"],
            ["LRANGE", f"{key}:l", 0, -1],
            ["TIME"],
        ]
    )
    assert replies[0] == b"PONG"
    assert replies[2] == b"OK"
    assert replies[3] == "välue\r\nwith a line break".encode()
    assert replies[4] is None
    assert replies[5] == 2
    assert replies[6] == [b"a", b"1", b"b", b""]
    assert replies[7] == []
    time_reply = replies[8]
    assert isinstance(time_reply, list)
    assert len(time_reply) == 2


def test_a_reply_larger_than_one_read_arrives_whole(
    client: RespClient, redis_location: StoreLocation
) -> None:
    key = f"{redis_location.namespace}:big"
    values = [f"{i:06d}-" + "x" * (i % 97) for i in range(5000)]
    client.pipeline([["DEL", key], ["RPUSH", key, *values]])
    (found,) = client.pipeline([["LRANGE", key, 0, -1]])
    assert found == [v.encode() for v in values]
    (blob,) = client.pipeline([["SET", key, "y" * 300_000], ["GET", key]])[1:]
    assert blob == b"y" * 300_000


def test_an_error_reply_is_raised_after_every_reply_was_read(
    client: RespClient, redis_location: StoreLocation
) -> None:
    key = f"{redis_location.namespace}:err"
    with pytest.raises(RespError, match="WRONGTYPE"):
        client.pipeline([["SET", key, "text"], ["HGETALL", key], ["SET", f"{key}:2", "later"]])
    # The replies after the error were read: the connection is still in step.
    assert client.pipeline([["GET", f"{key}:2"]]) == [b"later"]


def test_the_database_of_the_url_is_selected(redis_server: RedisServer) -> None:
    location = parse_store(f"redis://127.0.0.1:{redis_server.port}/5?namespace=db5")
    with redis.Redis(port=redis_server.port, db=5) as other:
        other.set("db5:marker", "in five")
    try:
        with RespClient(location) as client:
            assert client.pipeline([["GET", "db5:marker"]]) == [b"in five"]
    finally:
        with redis.Redis(port=redis_server.port, db=5) as other:
            other.delete("db5:marker")


@pytest.fixture(scope="module")
def guarded() -> Iterator[RedisServer]:
    """A redis-server of its own that asks for a password."""
    server = start_redis()
    try:
        with redis.Redis(port=server.port) as admin:
            admin.config_set("requirepass", CANARY)
        yield server
    finally:
        server.stop()


def test_the_password_of_the_url_is_sent(guarded: RedisServer) -> None:
    location = parse_store(f"redis://:{CANARY}@127.0.0.1:{guarded.port}/0?namespace=p")
    with RespClient(location) as client:
        assert client.pipeline([["PING"]]) == [b"PONG"]
    named = parse_store(f"redis://default:{CANARY}@127.0.0.1:{guarded.port}/0?namespace=p")
    with RespClient(named) as client:
        assert client.pipeline([["PING"]]) == [b"PONG"]


def test_a_wrong_password_is_refused_without_showing_it(guarded: RedisServer) -> None:
    location = parse_store(f"redis://:wrong-{CANARY}@127.0.0.1:{guarded.port}/0")
    with pytest.raises(RespError) as caught:
        RespClient(location).connect()
    assert CANARY not in str(caught.value)
    bare = parse_store(f"redis://127.0.0.1:{guarded.port}/0")
    with RespClient(bare) as client, pytest.raises(RespError, match="NOAUTH"):
        client.pipeline([["GET", "anything"]])


def test_a_refused_connection_is_unreachable_naming_host_and_port() -> None:
    port = free_port()  # nothing listens there
    location = parse_store(f"redis://:{CANARY}@127.0.0.1:{port}/0")
    with pytest.raises(StoreUnreachable) as caught:
        RespClient(location).connect()
    assert f"127.0.0.1:{port}" in caught.value.reason
    assert "refused" in caught.value.reason.lower()
    assert CANARY not in str(caught.value)


def test_a_server_gone_mid_read_is_unreachable() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        client = RespClient(parse_store(f"redis://127.0.0.1:{port}/0"))
        client.connect()
        accepted, _ = listener.accept()
        accepted.close()  # closes before any reply
        with pytest.raises(StoreUnreachable, match="reading from"):
            client.pipeline([["PING"]])
        client.close()


@pytest.mark.parametrize(
    "url",
    [
        "rediss://127.0.0.1:6380/0",
        "redis://127.0.0.1:6379/0?cluster=yes",
        "redis://someone@127.0.0.1:6379/0",
    ],
)
def test_tls_cluster_and_a_user_without_password_are_left_to_redis_py(url: str) -> None:
    location = parse_store(url)
    assert not supports(location)
    with pytest.raises(ValueError, match="not a plain redis://"):
        RespClient(location)


def test_the_wait_mode_is_left_to_redis_py() -> None:
    location = parse_store("redis://127.0.0.1:6379/0")
    assert supports(location)
    waiting = dataclasses.replace(location, unavailable=StoreUnavailable.WAIT)
    assert not supports(waiting)
