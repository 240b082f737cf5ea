"""AsyncResp on a real redis-server: concurrent commands share one connection and each
gets its own reply; an error reply is RespError; a cancelled command's reply is dropped and
the next gets its own; a reply later than the socket timeout fails the connection and the
next command connects again; the URL's database is selected. Through RedisConnection, a
script is awaited (and loaded again when forgotten), and an unreachable server is
StoreUnreachable."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import redis
from tests.redis_server import RedisServer, free_port

from backstay.store.location import StoreLocation, StoreUnreachable, parse_store
from backstay.store.redis import _aresp
from backstay.store.redis._aresp import AsyncResp
from backstay.store.redis._client import RedisConnection
from backstay.store.redis._lean import LeanScript
from backstay.store.redis._resp import RespError

TASKS = 50
GET_OR = LeanScript("return redis.call('GET', KEYS[1]) or ARGV[1]")
# Holds the server ARGV[1] microseconds before it answers (DEBUG SLEEP is not allowed).
BUSY = """
local s = redis.call('TIME')
local start = s[1] * 1000000 + s[2]
repeat
  local t = redis.call('TIME')
until t[1] * 1000000 + t[2] - start >= tonumber(ARGV[1])
return 1
"""


def _key(location: StoreLocation, name: str) -> str:
    return f"{{{location.namespace}:aresp}}:{name}"


def _uvloop_run(main: Coroutine[Any, Any, Any]) -> Any:
    uvloop = pytest.importorskip("uvloop")
    return uvloop.run(main)


@pytest.mark.parametrize("run", [asyncio.run, _uvloop_run], ids=["asyncio", "uvloop"])
def test_concurrent_commands_each_get_their_own_reply(
    redis_location: StoreLocation, run: Callable[[Coroutine[Any, Any, Any]], Any]
) -> None:
    client = AsyncResp(redis_location)

    async def one(i: int) -> bytes | int | list[object] | None:
        key = _key(redis_location, str(i))
        await client.command("SET", key, str(i))
        return await client.command("GET", key)  # type: ignore[return-value]

    async def main() -> list[object]:
        try:
            return list(await asyncio.gather(*(one(i) for i in range(TASKS))))
        finally:
            client.close()

    assert run(main()) == [str(i).encode() for i in range(TASKS)]


def test_loops_on_two_threads_each_get_a_connection_of_their_own(
    redis_location: StoreLocation,
) -> None:
    client = AsyncResp(redis_location)
    answers: dict[int, list[object]] = {}

    def on_a_thread(n: int) -> None:
        async def main() -> list[object]:
            replies: list[object] = []
            for i in range(TASKS):
                key = _key(redis_location, f"{n}-{i}")
                await client.command("SET", key, f"{n}-{i}")
                replies.append(await client.command("GET", key))
            return replies

        answers[n] = asyncio.run(main())

    threads = [threading.Thread(target=on_a_thread, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    client.close()
    assert answers == {n: [f"{n}-{i}".encode() for i in range(TASKS)] for n in range(2)}


def test_an_error_reply_is_a_resp_error_and_the_next_command_is_answered(
    redis_location: StoreLocation,
) -> None:
    client = AsyncResp(redis_location)
    key = _key(redis_location, "text")

    async def main() -> object:
        try:
            await client.command("SET", key, "text")
            with pytest.raises(RespError, match="not an integer"):
                await client.command("INCR", key)
            return await client.command("GET", key)
        finally:
            client.close()

    assert asyncio.run(main()) == b"text"


def test_a_cancelled_commands_reply_is_dropped(redis_location: StoreLocation) -> None:
    client = AsyncResp(redis_location)
    key = _key(redis_location, "after")

    async def main() -> object:
        try:
            await client.command("SET", key, "mine")
            slow = asyncio.ensure_future(client.command("EVAL", BUSY, "0", "200000"))
            await asyncio.sleep(0)  # sent
            slow.cancel()
            return await client.command("GET", key)
        finally:
            client.close()

    assert asyncio.run(main()) == b"mine"


def test_a_late_reply_fails_the_connection_and_the_next_connects_again(
    redis_location: StoreLocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_aresp, "SOCKET_TIMEOUT_S", 0.1)
    client = AsyncResp(redis_location)
    key = _key(redis_location, "late")

    async def main() -> object:
        try:
            await client.command("SET", key, "fresh")
            with pytest.raises(TimeoutError):
                await client.command("EVAL", BUSY, "0", "500000")
            # The next command waits for the script's end on a new connection.
            monkeypatch.setattr(_aresp, "SOCKET_TIMEOUT_S", 5.0)
            return await client.command("GET", key)
        finally:
            client.close()

    assert asyncio.run(main()) == b"fresh"


def test_a_connection_the_server_closed_while_idle_connects_again(
    redis_location: StoreLocation, redis_server: RedisServer
) -> None:
    client = AsyncResp(redis_location)
    key = _key(redis_location, "killed")

    async def main() -> tuple[object, object, object]:
        try:
            await client.command("SET", key, "kept")
            killed = await client.command("CLIENT", "ID")
            with redis.Redis(port=redis_server.port) as admin:
                admin.client_kill_filter(_id=killed)
            for _ in range(2):  # the loop polls the socket, then reads its end
                await asyncio.sleep(0)
            return killed, await client.command("GET", key), await client.command("CLIENT", "ID")
        finally:
            client.close()

    killed, value, now = asyncio.run(main())
    assert value == b"kept"
    assert now != killed


def test_the_urls_database_is_selected(redis_server: RedisServer) -> None:
    location = parse_store(f"redis://127.0.0.1:{redis_server.port}/4")
    client = AsyncResp(location)

    async def main() -> None:
        try:
            await client.command("SET", "aresp:db4", "four")
        finally:
            client.close()

    asyncio.run(main())
    with redis.Redis(port=redis_server.port, db=4) as other:
        assert other.get("aresp:db4") == b"four"
        other.delete("aresp:db4")


def test_a_script_is_awaited_and_loaded_again_when_forgotten(
    redis_location: StoreLocation,
) -> None:
    conn = RedisConnection(redis_location)
    key = _key(redis_location, "script")

    async def main() -> tuple[object, object]:
        first = await conn.aevalsha(GET_OR, [key], ["absent"])
        conn.execute("SET", key, "present")
        conn.execute("SCRIPT", "FLUSH")
        return first, await conn.aevalsha(GET_OR, [key], ["absent"])

    try:
        assert asyncio.run(main()) == (b"absent", b"present")
    finally:
        conn.close()


def test_an_unreachable_server_is_store_unreachable() -> None:
    conn = RedisConnection(parse_store(f"redis://127.0.0.1:{free_port()}/0"))
    try:
        with pytest.raises(StoreUnreachable):
            asyncio.run(conn.aevalsha(GET_OR, ["k"], ["v"]))
    finally:
        conn.close()
