"""The SQLite ``StoreBundle``: every store in ``<state_dir>/state.sqlite`` (the default)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path

from backstay.clock import Clock
from backstay.engine.stores import StoreBundle
from backstay.store.location import StoreLocation
from backstay.store.sqlite.attempt_spend import SQLiteAttemptSpend
from backstay.store.sqlite.breakers import SQLiteBreakerStore
from backstay.store.sqlite.circuit_log import SQLiteCircuitLog
from backstay.store.sqlite.fallback import SQLiteFallbackStore
from backstay.store.sqlite.operations import SQLiteOperationStore
from backstay.store.sqlite.spend import SQLiteSpendLedger
from backstay.store.sqlite.tasks import SQLiteTaskStore

__all__ = ["open_sqlite_stores"]


def open_sqlite_stores(
    location: StoreLocation,
    *,
    state_dir: Path,
    clock: Clock,
    secrets: Mapping[str, str] | None,
) -> StoreBundle:
    """Open every store on ``state_dir/state.sqlite`` (created when missing); a store that
    fails to open closes the ones opened before it."""
    with ExitStack() as opened:
        tasks = opened.enter_context(SQLiteTaskStore(state_dir, secrets=secrets))
        operations = opened.enter_context(SQLiteOperationStore(tasks.path, clock=clock))
        # On the task store's connection: an attempt's spend is kept in the transactions
        # that begin and end it (SQLiteAttemptSpend).
        spend = opened.enter_context(SQLiteSpendLedger(state_dir, tasks=tasks))
        circuit_log = opened.enter_context(SQLiteCircuitLog(state_dir))
        breakers = opened.enter_context(SQLiteBreakerStore(tasks.path))
        fallback = opened.enter_context(SQLiteFallbackStore(tasks.path))
        opened.pop_all()
    # One connection for every store of the file (SQLiteFile.adopt); the task store closes it.
    for store in (operations, circuit_log, breakers, fallback):
        store.adopt(tasks)
    return StoreBundle(
        location=location,
        tasks=tasks,
        operations=operations,
        breakers=breakers,
        fallback=fallback,
        spend=spend,
        circuit_log=circuit_log,
        attempt_spend=SQLiteAttemptSpend(tasks, spend),
    )
