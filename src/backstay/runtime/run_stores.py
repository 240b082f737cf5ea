"""Where the agent runtime keeps a batch's records: the batch's own store, nowhere else.

``open_run_stores(location)`` opens the run store (checkpoints, approvals, tool cache) and
the session memory at a store location (``backstay.store.location``), from the store
wing (``backstay.store.sqlite``, ``backstay.store.redis``):

* SQLite: ``<state dir>/state.sqlite`` of the location, beside the engine's task tables
  (``SQLiteRunStore``, ``SQLiteMemory``; a file that is not a backstay store is refused
  and left unchanged);
* Redis: the location's Redis under its namespace (``RedisRunStore``, ``RedisMemory``),
  shared by every process and machine of the batch, and stopping or waiting as the
  location's ``unavailable`` mode says when Redis does not answer.

The engine gives an attempt its batch's location (``AgentRequest.store``); ``backstay
escalations`` opens the same one to decide an approval.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from backstay.errors import ConfigError
from backstay.runtime.memory import MemoryManager
from backstay.runtime.store import RunStore
from backstay.store.location import StoreKind, StoreLocation
from backstay.store.open import require_redis

__all__ = ["STATE_FILE", "RunStores", "open_run_stores", "state_file"]

STATE_FILE: Final = "state.sqlite"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunStores:
    """The open run store and session memory of one location."""

    runs: RunStore
    memory: MemoryManager


def state_file(location: StoreLocation) -> Path:
    """The SQLite file of a SQLite ``location``: ``<its directory>/state.sqlite``."""
    if location.kind is not StoreKind.SQLITE or location.path is None:
        raise ConfigError(f"names no state directory ({location.display})", where="store location")
    return Path(location.path) / STATE_FILE


@contextlib.contextmanager
def open_run_stores(location: StoreLocation) -> Iterator[RunStores]:
    """The run store and memory at ``location``, closed on leaving the block."""
    if location.kind is StoreKind.REDIS:
        require_redis()
        from backstay.store.redis._client import RedisConnection  # noqa: PLC0415 - the extra
        from backstay.store.redis.runs import RedisRunStore  # noqa: PLC0415
        from backstay.store.redis.runtime_memory import RedisMemory  # noqa: PLC0415

        conn = RedisConnection(location)
        try:
            yield RunStores(runs=RedisRunStore(conn), memory=RedisMemory(conn))
        finally:
            conn.close()
        return
    from backstay.store.sqlite.runs import SQLiteRunStore  # noqa: PLC0415
    from backstay.store.sqlite.runtime_memory import SQLiteMemory  # noqa: PLC0415

    path = state_file(location)
    with SQLiteRunStore(path) as runs, SQLiteMemory(path) as memory:
        yield RunStores(runs=runs, memory=memory)
