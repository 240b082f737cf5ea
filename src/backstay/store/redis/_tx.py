"""One optimistic transaction on Redis: ``WATCH`` the keys, read them and Redis ``TIME``,
decide in Python, then ``MULTI``/``EXEC`` the writes — redone from the start whenever
another client changed a watched key in between (redis-py's ``transaction``).

Every store whose decision is pure Python code shared with the memory and SQLite stores
(the lease protocol, the breaker's transitions, the task state machine) runs it here, so
each behaves exactly as the other stores do. The decision may run more than once; it must
not act on the world. Keys of one transaction share a hash tag (one Cluster slot).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import redis
from redis.client import Pipeline

from backstay.clock import Clock
from backstay.store.redis._client import RedisConnection, is_cluster, node_time, server_time

__all__ = ["Decide", "transact"]

T = TypeVar("T")
Decide = Callable[[Pipeline, float], T]
"""``(pipe, now) → answer``: read with ``pipe`` (immediate mode), then ``pipe.multi()`` and
queue the writes (or queue none). ``now``: Unix seconds, Redis's clock unless overridden."""


def transact(
    conn: RedisConnection, watch: Sequence[str], decide: Decide[T], *, clock: Clock | None = None
) -> T:
    """Run ``decide`` atomically over the ``watch``ed keys; its answer. ``clock``: read the
    time there instead of Redis ``TIME`` (tests with a fake clock)."""

    def run(client: redis.Redis) -> T:
        def body(pipe: Pipeline) -> T:
            if clock is not None:
                now = clock.now().timestamp()
            elif is_cluster(client):  # a cluster's pipeline sends no keyless command
                now = node_time(client, watch[0])
            else:
                now = server_time(pipe.time())
            return decide(pipe, now)

        # redis-py types the callable as returning None, though value_from_callable returns it.
        answer: T = client.transaction(body, *watch, value_from_callable=True)  # type: ignore[arg-type,assignment]
        return answer

    return conn.call(run)
