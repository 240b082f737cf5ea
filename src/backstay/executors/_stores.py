"""Where a worker finds the batch's state: the one place a store location is turned into
the engine a worker drives tasks with.

The driver passes each worker a store *location* as text, never an open store; every
worker opens the stores itself. Until ``backstay.store.location`` (``parse_store``,
``open_stores``) is on this branch, the only location is a SQLite state directory, and
these two functions are its whole equivalent: when it lands, ``store_location`` returns
``engine.stores.location`` as text and ``open_worker_engine`` passes
``stores=open_stores(parse_store(location), state_dir=…, secrets=os.environ)``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from backstay.engine.runner import Engine

if TYPE_CHECKING:
    from backstay.executors.ray_worker import WorkerJob

__all__ = ["open_worker_engine", "store_location"]


def store_location(engine: Engine) -> str:
    """The location of ``engine``'s stores, as text a worker can open: for SQLite, the
    state directory (absolute)."""
    return os.fspath(engine.state_dir)


def open_worker_engine(job: WorkerJob) -> Engine:
    """An engine over the stores at ``job.store``, driving tasks in this process only
    (its secrets and provider variables come from this process's environment)."""
    return Engine(
        Path(job.store),
        concurrency=1,
        guard_settings=job.guard_settings,
        breaker=job.breaker,
        fallback_rules=job.fallback_rules,
        event_log=job.event_log,
    )
