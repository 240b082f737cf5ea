"""The one connection to Redis every Redis store shares, and what happens when it fails.

``RedisConnection`` wraps a ``redis.Redis`` client made from the location's URL with short
timeouts and no retries of its own (a retried ``EXEC`` could apply twice). Every store call
goes through ``call(fn)``:

* when Redis answers, ``fn``'s answer;
* when it does not (refused, reset, timed out), by the location's ``unavailable`` mode:
  ``stop`` raises ``StoreUnreachable`` at once, naming the store (never its password);
  ``wait`` reports the outage (``on_outage``), retries ``fn`` every ``wait_s`` (doubling
  to ``max_wait_s``) until Redis answers again, then reports that it is back.

Nothing is ever written anywhere else in the meantime: a store that cannot reach Redis
waits or stops, it never switches to local state.

``execute(*args)`` and ``evalsha(script, keys, args)`` run one command the same way, on
``LeanCommands``' connections rather than through the client's layers (``_lean``): the
path of the hottest calls (a breaker's read, a limiter's script). A cluster, or a client
given by the caller, takes the client's path. ``aevalsha`` awaits a script on an asyncio
connection (``_aresp``) instead, for a plain ``redis://`` location in ``stop`` mode (an
unreachable server is ``StoreUnreachable`` as ever); on any other it runs ``evalsha``.

Keys: every key starts with ``{namespace:...}``; the part in braces is the Redis Cluster
hash tag, so the keys one script or transaction touches share a slot (``key``).
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from backstay.store.location import StoreLocation, StoreUnavailable, StoreUnreachable
from backstay.store.redis._aresp import AsyncResp
from backstay.store.redis._keys import key
from backstay.store.redis._lean import LeanCommands, LeanScript
from backstay.store.redis._resp import RespError, supports

__all__ = ["RedisConnection", "StoreUnreachable", "is_cluster", "node_time", "server_time"]

T = TypeVar("T")
DEFAULT_SOCKET_TIMEOUT_S: Final = 5.0
DEFAULT_CONNECT_TIMEOUT_S: Final = 2.0
DEFAULT_WAIT_S: Final = 0.5
DEFAULT_MAX_WAIT_S: Final = 10.0
_UNREACHABLE: Final = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
OutageCallback = Callable[[str], None]


def _client(location: StoreLocation) -> redis.Redis:
    url = _without_query(location.url or "")
    options: dict[str, Any] = {
        "socket_timeout": DEFAULT_SOCKET_TIMEOUT_S,
        "socket_connect_timeout": DEFAULT_CONNECT_TIMEOUT_S,
        "retry": Retry(NoBackoff(), 0),
    }
    if location.cluster:
        # A RedisCluster answers every command, pipeline, transaction and script the stores
        # send (each touches the keys of one hash tag: one slot, one node); typed as the
        # plain client they are written against.
        return cast("redis.Redis", RedisCluster.from_url(url, **options))
    return redis.Redis.from_url(url, **options)


def is_cluster(client: object) -> bool:
    """Whether ``client`` is a Redis Cluster client."""
    return isinstance(client, RedisCluster)


def node_time(client: Any, key: str) -> float:
    """Redis ``TIME`` of the server holding ``key`` (a cluster's node owning its slot)."""
    if is_cluster(client):
        return server_time(client.time(target_nodes=client.get_node_from_key(key)))
    return server_time(client.time())


def server_time(raw: tuple[int, int] | list[Any]) -> float:
    """Redis ``TIME`` (seconds, microseconds) as Unix seconds."""
    return int(raw[0]) + int(raw[1]) / 1_000_000


class RedisConnection:
    """The client of one Redis location; thread-safe (redis-py pools its connections)."""

    def __init__(
        self,
        location: StoreLocation,
        *,
        client: redis.Redis | None = None,
        on_outage: OutageCallback | None = None,
        wait_s: float = DEFAULT_WAIT_S,
        max_wait_s: float = DEFAULT_MAX_WAIT_S,
        max_outage_s: float | None = None,
    ) -> None:
        self.location = location
        self.namespace = location.namespace
        self.client: redis.Redis = client or _client(location)
        # Our own client (not a cluster's): its pool's settings make the lean connections.
        self._lean = (
            LeanCommands(self.client.connection_pool)
            if client is None and type(self.client) is redis.Redis
            else None
        )
        self._async = AsyncResp(location) if self._lean is not None and supports(location) else None
        self.on_outage = on_outage
        self._wait_s = wait_s
        self._max_wait_s = max_wait_s
        self._max_outage_s = max_outage_s
        self._lock = threading.Lock()
        self._local = threading.local()
        self.outages = 0

    @property
    def replaying(self) -> bool:
        """True while ``call`` runs its function again after Redis stopped answering: a
        write it made may have been applied with only the reply lost, so stores accept
        finding their own change already there."""
        return bool(getattr(self._local, "replaying", False))

    def key(self, tag: str, *parts: str) -> str:
        """``{namespace:tag}:part:…`` — keys with one ``tag`` share a cluster slot."""
        return key(self.namespace, tag, *parts)

    def call(self, fn: Callable[[redis.Redis], T]) -> T:
        """``fn(client)``, handling an unreachable Redis as the module docstring says."""
        try:
            return fn(self.client)
        except _UNREACHABLE as exc:
            if self.location.unavailable is StoreUnavailable.STOP:
                raise StoreUnreachable(self.location.display, _reason(exc)) from None
            return self._wait(fn, exc)

    def execute(self, *args: str | bytes) -> Any:
        """The reply to one command (bytes, not decoded), through ``call``."""
        lean = self._lean
        if lean is None:
            return self.call(lambda client: cast("Any", client).execute_command(*args))
        return self.call(lambda _client: lean.execute(*args))

    def evalsha(self, script: LeanScript, keys: list[str], args: list[str | bytes]) -> Any:
        """``script``'s answer over ``keys`` and ``args`` (loaded when Redis lacks it),
        through ``call``."""
        lean = self._lean
        if lean is None:
            return self.call(lambda client: _client_evalsha(client, script, keys, args))
        return self.call(lambda _client: lean.evalsha(script, keys, args))

    async def aevalsha(self, script: LeanScript, keys: list[str], args: list[str | bytes]) -> Any:
        """``evalsha`` awaited without holding the event loop, where ``_aresp`` can."""
        client = self._async
        if client is None:
            return self.evalsha(script, keys, args)
        count = str(len(keys))
        try:
            try:
                return await client.command("EVALSHA", script.sha, count, *keys, *args)
            except RespError as err:
                if not str(err).startswith("NOSCRIPT"):
                    raise redis.exceptions.ResponseError(str(err)) from None
                await client.command("SCRIPT", "LOAD", script.source)
                return await client.command("EVALSHA", script.sha, count, *keys, *args)
        except (OSError, ConnectionError, TimeoutError) as exc:
            raise StoreUnreachable(self.location.display, _reason(exc)) from None

    def _wait(self, fn: Callable[[redis.Redis], T], first: Exception) -> T:
        with self._lock:
            self.outages += 1
        self._tell(
            f"the shared store {self.location.display} does not answer ({_reason(first)}): "
            "waiting for it; nothing is recorded elsewhere meanwhile"
        )
        started = time.monotonic()
        delay = self._wait_s
        while True:
            time.sleep(delay)
            self._local.replaying = True
            try:
                answer = fn(self.client)
            except _UNREACHABLE as exc:
                waited = time.monotonic() - started
                if self._max_outage_s is not None and waited >= self._max_outage_s:
                    raise StoreUnreachable(
                        self.location.display, f"{_reason(exc)} (waited {waited:.0f} s)"
                    ) from None
                delay = min(delay * 2, self._max_wait_s)
                continue
            finally:
                self._local.replaying = False
            self._tell(
                f"the shared store {self.location.display} answers again after "
                f"{time.monotonic() - started:.1f} s"
            )
            return answer

    def _tell(self, message: str) -> None:
        if self.on_outage is not None:
            self.on_outage(message)

    def ping(self) -> None:
        """Check that Redis answers (``StoreUnreachable`` in ``stop`` mode otherwise)."""
        self.call(lambda client: client.ping())

    def close(self) -> None:
        if self._lean is not None:
            self._lean.close()
        if self._async is not None:
            self._async.close()
        # A cluster client's close() leaves its nodes' connection pools connected (each
        # node's client was given its pool, so it does not close it): disconnect them.
        get_nodes = getattr(self.client, "get_nodes", None)
        nodes = list(get_nodes()) if callable(get_nodes) else []
        self.client.close()
        for node in nodes:
            node_client = getattr(node, "redis_connection", None)
            if node_client is not None:
                node_client.connection_pool.disconnect()


def _client_evalsha(
    client: redis.Redis, script: LeanScript, keys: list[str], args: list[str | bytes]
) -> Any:
    try:
        return client.evalsha(script.sha, len(keys), *keys, *args)
    except redis.exceptions.NoScriptError:
        client.script_load(script.source)
        return client.evalsha(script.sha, len(keys), *keys, *args)


def _without_query(url: str) -> str:
    """The URL without backstay's own parameters (``namespace``), which redis-py would
    take for connection settings."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _reason(exc: Exception) -> str:
    """The error without the URL (redis-py's messages may name host and port, never the
    password; kept short all the same)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]
