"""``SQLiteFile.adopt``: the stores of a SQLite bundle use the task store's one connection,
which only the task store closes; a store opened on its own keeps and closes its own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from backstay.store.location import StoreLocation
from backstay.store.open import open_stores
from backstay.store.sqlite.operations import SQLiteOperationStore
from backstay.store.sqlite.tasks import STATE_FILE, SQLiteTaskStore
from backstay.testing import FakeClock


def test_the_stores_of_a_bundle_share_the_task_stores_connection(tmp_path: Path) -> None:
    stores = open_stores(StoreLocation.sqlite(tmp_path), state_dir=tmp_path, clock=FakeClock())
    tasks = stores.tasks
    assert isinstance(tasks, SQLiteTaskStore)
    conn, _lock = tasks.connection()
    shared = (stores.operations, stores.breakers, stores.fallback, stores.circuit_log, stores.spend)
    assert all(getattr(store, "_conn", None) is conn for store in shared)
    stores.operations.claim("op", "me", 60.0)  # works through the shared connection
    stores.close()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")


def test_an_adopting_store_leaves_the_connection_open_when_it_closes(tmp_path: Path) -> None:
    with SQLiteTaskStore(tmp_path) as tasks:
        operations = SQLiteOperationStore(tasks.path)
        operations.adopt(tasks)
        operations.close()
        operations.claim("op", "me", 60.0)  # still open: the task store's
        assert tasks.task("nothing") is None


def test_a_store_on_its_own_closes_its_own_connection(tmp_path: Path) -> None:
    operations = SQLiteOperationStore(tmp_path / STATE_FILE)
    operations.close()
    with pytest.raises(sqlite3.ProgrammingError):
        operations.claim("op", "me", 60.0)
