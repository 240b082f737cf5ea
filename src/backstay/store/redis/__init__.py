"""The Redis store (the ``redis`` extra): every store protocol on one shared Redis.

``open_redis_stores`` gives the engine's bundle (tasks, operations, breakers, fallback,
spend, circuit log); ``RedisRateLimiter`` and ``RedisRetryBudget`` are the shared forms
of ``RateLimiter`` and ``RetryBudget`` for library callers. Every store talks through one
``RedisConnection`` (its ``unavailable`` mode: stop or wait). Its names need redis-py and
are imported on first use (PEP 562): ``health_reads`` and ``status_reads``, what
``backstay health`` and ``backstay status`` read, ``settings``' wording of its warnings, and
``_resp``, the small client they read a plain ``redis://`` server with, load no redis-py;
``backstay.store.location`` imports this package only for a Redis location.
See docs/scale-out.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from backstay._lazy_names import listed_names, load_name

if TYPE_CHECKING:
    from backstay.store.redis._client import RedisConnection
    from backstay.store.redis.breakers import RedisBreakerStore, RedisFallbackStore
    from backstay.store.redis.budget import RedisRetryBudget
    from backstay.store.redis.bundle import open_redis_stores
    from backstay.store.redis.circuit_log import RedisCircuitLog
    from backstay.store.redis.clock import RedisClock
    from backstay.store.redis.limiter import (
        RedisRateLimiter,
        RedisRateLimiterRegistry,
        credential_fingerprint,
    )
    from backstay.store.redis.operations import RedisOperationStore
    from backstay.store.redis.settings import check_server
    from backstay.store.redis.spend import RedisSpendLedger
    from backstay.store.redis.tasks import RedisTaskStore

__all__ = [
    "RedisBreakerStore",
    "RedisCircuitLog",
    "RedisClock",
    "RedisConnection",
    "RedisFallbackStore",
    "RedisOperationStore",
    "RedisRateLimiter",
    "RedisRateLimiterRegistry",
    "RedisRetryBudget",
    "RedisSpendLedger",
    "RedisTaskStore",
    "check_server",
    "credential_fingerprint",
    "open_redis_stores",
]

# Where each name lives, imported on first use.
_LAZY: Final = {
    "RedisBreakerStore": "backstay.store.redis.breakers",
    "RedisCircuitLog": "backstay.store.redis.circuit_log",
    "RedisClock": "backstay.store.redis.clock",
    "RedisConnection": "backstay.store.redis._client",
    "RedisFallbackStore": "backstay.store.redis.breakers",
    "RedisOperationStore": "backstay.store.redis.operations",
    "RedisRateLimiter": "backstay.store.redis.limiter",
    "RedisRateLimiterRegistry": "backstay.store.redis.limiter",
    "RedisRetryBudget": "backstay.store.redis.budget",
    "RedisSpendLedger": "backstay.store.redis.spend",
    "RedisTaskStore": "backstay.store.redis.tasks",
    "check_server": "backstay.store.redis.settings",
    "credential_fingerprint": "backstay.store.redis.limiter",
    "open_redis_stores": "backstay.store.redis.bundle",
}


def __getattr__(name: str) -> Any:
    return load_name(globals(), name, _LAZY)


def __dir__() -> list[str]:
    return listed_names(globals())
