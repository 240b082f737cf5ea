"""What a backstay SQLite file holds, read without changing it.

``open_component`` initialises a missing or empty file; a command that only reads (or
must first decide whether the records it expects are there) looks with ``peek`` instead:
a read-only connection that never creates the file or writes a schema into it.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Final

__all__ = ["Peek", "peek"]

_SCHEMA_TABLE: Final = "backstay_schema"
_TASKS_TABLE: Final = "backstay_tasks"
_TIMEOUT_S: Final = 2.0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Peek:
    """A file's size in bytes, the backstay components it holds a schema for, and its
    tasks counted by workflow id."""

    size: int
    components: frozenset[str]
    workflows: Mapping[str, int]

    @property
    def tasks(self) -> int:
        return sum(self.workflows.values())


def peek(path: str | os.PathLike[str]) -> Peek | None:
    """What the SQLite file ``path`` holds; ``None`` when there is no such file.
    ``sqlite3.DatabaseError`` when it cannot be read (not a database, damaged, locked)."""
    file = Path(path)
    try:
        size = file.stat().st_size
    except FileNotFoundError:
        return None
    if size == 0:
        return Peek(size=0, components=frozenset(), workflows={})
    # Without a -wal file nothing is being written in WAL mode: read the file as it is,
    # creating no -wal or -shm beside it. With one, read through it (it may hold the tasks).
    wal = file.with_name(f"{file.name}-wal").exists()
    mode = "mode=ro" if wal else "mode=ro&immutable=1"
    conn = sqlite3.connect(
        f"{file.absolute().as_uri()}?{mode}", uri=True, timeout=_TIMEOUT_S, isolation_level=None
    )
    try:
        tables = {
            str(row[0])
            for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        components: frozenset[str] = frozenset()
        if _SCHEMA_TABLE in tables:
            rows = conn.execute(f"SELECT component FROM {_SCHEMA_TABLE}")  # noqa: S608
            components = frozenset(str(row[0]) for row in rows)
        workflows: dict[str, int] = {}
        if _TASKS_TABLE in tables:
            rows = conn.execute(
                f"SELECT workflow_id, count(*) FROM {_TASKS_TABLE} GROUP BY workflow_id"  # noqa: S608
            )
            workflows = {str(row[0]): int(row[1]) for row in rows}
    finally:
        conn.close()
    return Peek(size=size, components=components, workflows=workflows)
