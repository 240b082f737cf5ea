"""LeanCommands on a real redis-server: one command a call on connections of its own, a
connection left mid-command never hands its stale reply to the next command, an error
reply leaves it usable, a script the server forgot is loaded again; through
RedisConnection, an unreachable server stops with StoreUnreachable as every call does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from tests.redis_server import RedisServer, free_port

from backstay.store.location import StoreLocation, StoreUnreachable, parse_store
from backstay.store.redis._client import RedisConnection
from backstay.store.redis._lean import LeanCommands, LeanScript

ECHO_FIRST_KEY = LeanScript("return redis.call('GET', KEYS[1]) or ARGV[1]")


@pytest.fixture
def lean(redis_location: StoreLocation) -> Iterator[LeanCommands]:
    url = (redis_location.url or "").split("?", 1)[0]  # backstay's namespace is no pool setting
    pool = redis.ConnectionPool.from_url(url, socket_timeout=0.2)
    commands = LeanCommands(pool)
    try:
        yield commands
    finally:
        commands.close()
        pool.disconnect()


def _key(location: StoreLocation, name: str) -> str:
    return f"{{{location.namespace}:lean}}:{name}"


def test_a_command_is_answered_with_its_reply(
    lean: LeanCommands, redis_location: StoreLocation
) -> None:
    key = _key(redis_location, "k")
    assert lean.execute("SET", key, b"value") in {b"OK", "OK"}
    assert lean.execute("GET", key) == b"value"
    assert lean.execute("GET", _key(redis_location, "none")) is None


def test_an_error_reply_leaves_the_connection_usable(
    lean: LeanCommands, redis_location: StoreLocation
) -> None:
    key = _key(redis_location, "text")
    lean.execute("SET", key, "not a number")
    before = lean.execute("CLIENT", "ID")
    with pytest.raises(redis.exceptions.ResponseError, match="not an integer"):
        lean.execute("INCR", key)
    assert lean.execute("CLIENT", "ID") == before  # the same connection, still in step
    assert lean.execute("GET", key) == b"not a number"


def test_a_command_cut_short_leaves_no_reply_for_the_next(
    lean: LeanCommands, redis_location: StoreLocation
) -> None:
    queue, other = _key(redis_location, "queue"), _key(redis_location, "other")
    lean.execute("SET", other, "mine")
    before = lean.execute("CLIENT", "ID")
    with pytest.raises(redis.exceptions.TimeoutError):
        lean.execute("BLPOP", queue, "5")  # longer than the socket's 0.2 s
    lean.execute("RPUSH", queue, "item")
    # The cut connection was closed (its BLPOP with it): the next command gets its own
    # reply on a new one, and the item pushed after is still there.
    assert lean.execute("GET", other) == b"mine"
    assert lean.execute("CLIENT", "ID") != before
    assert lean.execute("LPOP", queue) == b"item"


def test_a_connection_the_server_closed_while_idle_connects_again(
    lean: LeanCommands, redis_location: StoreLocation, redis_server: RedisServer
) -> None:
    key = _key(redis_location, "killed")
    lean.execute("SET", key, "kept")
    killed = lean.execute("CLIENT", "ID")
    with redis.Redis(port=redis_server.port) as admin:
        assert admin.client_kill_filter(_id=killed) == 1
    assert lean.execute("GET", key) == b"kept"
    assert lean.execute("CLIENT", "ID") != killed


def test_a_script_the_server_forgot_is_loaded_again(
    lean: LeanCommands, redis_location: StoreLocation
) -> None:
    key = _key(redis_location, "script")
    assert lean.evalsha(ECHO_FIRST_KEY, [key], ["absent"]) == b"absent"
    lean.execute("SET", key, "present")
    lean.execute("SCRIPT", "FLUSH")
    assert lean.evalsha(ECHO_FIRST_KEY, [key], ["absent"]) == b"present"


def test_connections_are_reused_one_per_concurrent_command(lean: LeanCommands) -> None:
    ids = {lean.execute("CLIENT", "ID") for _ in range(5)}
    assert len(ids) == 1


def test_an_unreachable_server_stops_the_connection_calls() -> None:
    location = parse_store(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    conn = RedisConnection(location)
    try:
        with pytest.raises(StoreUnreachable):
            conn.execute("GET", "anything")
        with pytest.raises(StoreUnreachable):
            conn.evalsha(ECHO_FIRST_KEY, ["k"], ["v"])
    finally:
        conn.close()
