"""The Redis store (the ``redis`` extra): every store protocol on one shared Redis.

``open_redis_stores`` gives the engine's bundle (tasks, operations, breakers, fallback,
spend, circuit log); ``RedisRateLimiter`` and ``RedisRetryBudget`` are the shared forms
of ``RateLimiter`` and ``RetryBudget`` for library callers. Every store talks through one
``RedisConnection`` (its ``unavailable`` mode: stop or wait). Importing this package
needs redis-py; ``backstay.store.location`` imports it only for a Redis location.
See docs/scale-out.md.
"""

from __future__ import annotations

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
