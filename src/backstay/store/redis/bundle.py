"""``open_redis_stores``: every store of a Redis location, on one connection.

Opening pings Redis (an unreachable one is a ``ConfigError`` naming the location, never
its password: nothing has run yet) and checks its settings (``settings.check_server``;
the warnings are kept in ``StoreBundle.warnings`` for the command to print). Records are
stamped with a ``RedisClock`` (``StoreBundle.clock``), so every machine agrees on time.
The engine's rate limiters and retry budget are made on the same connection
(``RedisRateLimiterRegistry``, ``RedisRetryBudget``), shared by the whole fleet.
"""

from __future__ import annotations

from collections.abc import Mapping

from backstay.clock import Clock
from backstay.engine.stores import StoreBundle
from backstay.errors import ConfigError
from backstay.policy.budget import BudgetSettings
from backstay.policy.ratelimit import RateLimitSettings
from backstay.store.location import StoreLocation
from backstay.store.redis._client import OutageCallback, RedisConnection, StoreUnreachable
from backstay.store.redis.breakers import RedisBreakerStore, RedisFallbackStore
from backstay.store.redis.budget import RedisRetryBudget
from backstay.store.redis.circuit_log import RedisCircuitLog
from backstay.store.redis.clock import RedisClock
from backstay.store.redis.limiter import RedisRateLimiterRegistry
from backstay.store.redis.operations import RedisOperationStore
from backstay.store.redis.settings import check_server
from backstay.store.redis.spend import RedisSpendLedger
from backstay.store.redis.tasks import RedisTaskStore

__all__ = ["open_redis_stores"]


def open_redis_stores(
    location: StoreLocation,
    *,
    clock: Clock | None = None,
    secrets: Mapping[str, str] | None = None,
    on_outage: OutageCallback | None = None,
) -> StoreBundle:
    """The bundle of ``location``. ``clock``: stamp leases with it instead of Redis
    ``TIME`` (tests with a fake clock)."""
    conn = RedisConnection(location, on_outage=on_outage)
    try:
        conn.client.ping()
        problems = check_server(conn)
    except Exception as exc:
        conn.close()
        if isinstance(exc, StoreUnreachable) or _unreachable(exc):
            raise ConfigError(
                f"cannot reach Redis at {location.display}: {str(exc).splitlines()[0][:200]}",
                where="--store",
            ) from None
        raise

    def limiters(limits: Mapping[str, RateLimitSettings], at: Clock) -> RedisRateLimiterRegistry:
        del at  # the limiters are timed by Redis TIME
        return RedisRateLimiterRegistry(conn, limits, clock=clock)

    def budgets(name: str, settings: BudgetSettings, at: Clock) -> RedisRetryBudget:
        del at  # timed by Redis TIME
        return RedisRetryBudget(name, conn, settings=settings)

    return StoreBundle(
        location=location,
        tasks=RedisTaskStore(conn, secrets=secrets),
        operations=RedisOperationStore(conn, clock=clock),
        breakers=RedisBreakerStore(conn),
        fallback=RedisFallbackStore(conn),
        spend=RedisSpendLedger(conn),
        circuit_log=RedisCircuitLog(conn),
        clock=clock or RedisClock(conn),
        warnings=problems,
        closer=conn.close,
        limiters=limiters,
        budgets=budgets,
    )


def _unreachable(exc: Exception) -> bool:
    import redis  # noqa: PLC0415 - imported by the modules above already

    return isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError)
