"""Opening a file checks what it is first: foreign, damaged or newer files are refused
with a ConfigError naming the file, and are left byte for byte as they were."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from backstay.errors import ConfigError
from backstay.idempotency.records import Acquired
from backstay.store.sqlite.operations import SCHEMA_VERSION, SQLiteOperationStore
from backstay.store.sqlite.runs import SQLiteRunStore


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "store.sqlite"


def _sqlite(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def _refused(path: Path, match: str) -> ConfigError:
    before = path.read_bytes()
    siblings = sorted(p.name for p in path.parent.iterdir())
    with pytest.raises(ConfigError, match=match) as info:
        SQLiteOperationStore(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == siblings
    assert info.value.where == str(path)
    assert str(path) in str(info.value)
    return info.value


def test_a_missing_file_is_created(path: Path) -> None:
    with SQLiteOperationStore(path) as store:
        assert isinstance(store.claim("a:b:c", "w1", 1.0), Acquired)
    assert path.exists()


def test_an_empty_file_is_initialised(path: Path) -> None:
    path.write_bytes(b"")
    with SQLiteOperationStore(path) as store:
        assert isinstance(store.claim("a:b:c", "w1", 1.0), Acquired)


def test_reopening_a_store_keeps_it(path: Path) -> None:
    SQLiteOperationStore(path).close()
    SQLiteOperationStore(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM backstay_schema").fetchone() == (1,)


def test_a_file_holding_the_agent_runtimes_tables_opens(path: Path) -> None:
    """The runtime's run store shares the engine's ``state.sqlite``: its tables are
    backstay's own, not another application's."""
    SQLiteRunStore(path).close()
    with SQLiteOperationStore(path) as store:
        assert isinstance(store.claim("a:b:c", "w1", 1.0), Acquired)


def test_a_file_that_is_not_a_database_is_refused_unchanged(path: Path) -> None:
    path.write_text("name,cost\nrun,12\n", encoding="utf-8")
    _refused(path, "not a readable backstay store")


def test_a_damaged_database_is_refused_unchanged(path: Path) -> None:
    _sqlite(path, "CREATE TABLE backstay_notes (text TEXT)")
    data = bytearray(path.read_bytes())
    data[100:] = b"\xff" * (len(data) - 100)
    path.write_bytes(bytes(data))
    _refused(path, "not a readable backstay store")


def test_a_database_of_another_application_is_refused_unchanged(path: Path) -> None:
    _sqlite(path, "CREATE TABLE users (id INTEGER PRIMARY KEY)", "INSERT INTO users VALUES (1)")
    error = _refused(path, "not a backstay store")
    assert "users" in str(error)


def test_a_database_of_another_application_is_not_switched_to_wal(path: Path) -> None:
    _sqlite(path, "CREATE TABLE users (id INTEGER PRIMARY KEY)")
    _refused(path, "not a backstay store")
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_a_store_written_by_a_newer_backstay_is_refused_unchanged(path: Path) -> None:
    SQLiteOperationStore(path).close()
    _sqlite(path, "UPDATE backstay_schema SET version = version + 1")
    error = _refused(path, "newer backstay")
    assert f"version {SCHEMA_VERSION + 1}" in str(error)


def test_a_store_with_an_unknown_older_version_is_refused_unchanged(path: Path) -> None:
    SQLiteOperationStore(path).close()
    _sqlite(path, "UPDATE backstay_schema SET version = 0")
    _refused(path, "cannot read")


def test_operation_tables_without_a_schema_version_are_refused_unchanged(path: Path) -> None:
    _sqlite(path, "CREATE TABLE backstay_operations (operation_id TEXT)")
    _refused(path, "without a schema version")


def test_a_malformed_schema_table_is_refused_unchanged(path: Path) -> None:
    _sqlite(path, "CREATE TABLE backstay_schema (name TEXT)")
    _refused(path, "not a readable backstay store")


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x00" * 10),
        lambda p: p.write_bytes(bytes(range(256)) * 8),
    ],
    ids=["truncated-header", "binary-noise"],
)
def test_other_broken_files_are_refused_unchanged(
    path: Path, corrupt: Callable[[Path], None]
) -> None:
    corrupt(path)
    _refused(path, "not a readable backstay store")
