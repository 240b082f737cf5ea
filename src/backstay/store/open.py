"""Opening a store location: ``open_stores`` gives the ``StoreBundle`` the engine runs on
(``backstay.engine.stores``), every store in ``<state_dir>/state.sqlite`` or in one Redis
(``backstay.store.location`` says which; docs/scale-out.md). ``require_redis``: a
``ConfigError`` naming the extra when redis-py is missing.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.engine.stores import StoreBundle
from backstay.errors import ConfigError
from backstay.store.location import REDIS_EXTRA_HINT, StoreKind, StoreLocation

__all__ = ["open_stores", "require_redis"]


def require_redis() -> None:
    """``ConfigError`` naming the extra when redis-py is not installed."""
    if importlib.util.find_spec("redis") is None:
        raise ConfigError(
            f"a Redis store needs the redis extra: {REDIS_EXTRA_HINT}", where="--store"
        )


def open_stores(
    location: StoreLocation,
    *,
    state_dir: str | os.PathLike[str],
    clock: Clock = SYSTEM_CLOCK,
    secrets: Mapping[str, str] | None = None,
    on_outage: Callable[[str], None] | None = None,
) -> StoreBundle:
    """Open every store of ``location``. ``state_dir``: where a SQLite location without a
    path keeps ``state.sqlite`` (and where run artefacts go either way). ``clock``: for a
    Redis location, stamp leases with it instead of Redis ``TIME`` (tests only).
    ``on_outage``: told, in a sentence, when a shared store stops and starts answering
    (``unavailable: wait``)."""
    if location.kind is StoreKind.REDIS:
        require_redis()
        from backstay.store.redis.bundle import open_redis_stores  # noqa: PLC0415 - the extra

        own_clock = None if clock is SYSTEM_CLOCK else clock
        return open_redis_stores(location, clock=own_clock, secrets=secrets, on_outage=on_outage)
    from backstay.store.sqlite.bundle import open_sqlite_stores  # noqa: PLC0415 - no cycle

    return open_sqlite_stores(
        location, state_dir=Path(location.path or state_dir), clock=clock, secrets=secrets
    )
