"""Where a worker finds the batch's state: the one place a store location is turned into
the engine a worker drives tasks with.

The driver passes each worker a store *location* as text, never an open store; every
worker opens the stores itself (``backstay.store.location``): the SQLite file of the
state directory on the driver's machine, or a Redis store any machine reaches.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from backstay.engine.runner import Engine
from backstay.store.location import parse_store
from backstay.store.open import open_stores

if TYPE_CHECKING:
    from backstay.executors.ray_worker import WorkerJob

__all__ = ["open_worker_engine", "store_location"]


def store_location(engine: Engine) -> str:
    """The location of ``engine``'s stores, as text a worker can open: a Redis URL (its
    namespace kept), or the SQLite state directory."""
    return engine.stores.location.text


def open_worker_engine(job: WorkerJob) -> Engine:
    """An engine over the stores at ``job.store``, driving tasks in this process only
    (its secrets and provider variables come from this process's environment)."""
    location = parse_store(job.store, where="the batch's store", unavailable=job.store_unavailable)
    stores = open_stores(location, state_dir=job.state_dir, secrets=os.environ)
    return Engine(
        Path(job.state_dir),
        concurrency=1,
        guard_settings=job.guard_settings,
        breaker=job.breaker,
        fallback_rules=job.fallback_rules,
        event_log=job.event_log,
        stores=stores,
        rate_limits=job.rate_limits,
        retry_budget=job.retry_budget,
    )
