"""Breakers shared through Redis by several processes at once (the behaviour every
backend shares: tests/store/test_breaker_store.py and test_fallback_store.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.breaker.support import SERVER
from tests.redis_server import RedisServer

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.settings import BreakerSettings
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.breakers import RedisBreakerStore

SETTINGS = BreakerSettings(failure_threshold=2, failure_rate_threshold=None, open_duration_s=10.0)


_CHILD = textwrap.dedent(
    """
    import sys
    from backstay.breaker import BreakerSettings, CircuitBreaker
    from backstay.errors import CircuitOpen
    from backstay.store.location import parse_store
    from backstay.store.redis._client import RedisConnection
    from backstay.store.redis.breakers import RedisBreakerStore

    settings = BreakerSettings(
        failure_threshold=1, failure_rate_threshold=None, open_duration_s=0.0,
        half_open_max_probes=1, success_threshold=1,
    )
    conn = RedisConnection(parse_store(sys.argv[1]))
    breaker = CircuitBreaker("op", settings=settings, store=RedisBreakerStore(conn))
    got = 0
    for _ in range(int(sys.argv[2])):
        try:
            breaker.acquire()  # held: never reported, as if the probe were still running
            got += 1
        except CircuitOpen:
            pass
    conn.close()
    print(got)
    """
)


def test_processes_sharing_redis_send_exactly_one_half_open_probe(
    redis_server: RedisServer, redis_location: StoreLocation
) -> None:
    url = f"{redis_server.url}?namespace={redis_location.namespace}"
    conn = RedisConnection(redis_location)
    settings = SETTINGS.derive(failure_threshold=1, open_duration_s=0.0)
    CircuitBreaker("op", settings=settings, store=RedisBreakerStore(conn)).acquire().failure(SERVER)
    conn.close()
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, url, "60"], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    admitted = [int(child.communicate(timeout=60)[0]) for child in children]
    assert sum(admitted) == 1
