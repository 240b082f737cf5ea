"""A state file of task schema 1 (before attempts recorded their candidate) is migrated in
place when opened: its attempts stay readable, with no candidate."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from backstay.store import _task_rows as rows
from backstay.store.sqlite.tasks import STATE_FILE, SQLiteTaskStore

_V1_ATTEMPTS = rows.DDL[1].replace("    candidate TEXT,\n", "")


def _v1_file(state_dir: Path) -> None:
    state_dir.mkdir()
    conn = sqlite3.connect(state_dir / STATE_FILE)
    conn.execute("CREATE TABLE backstay_schema (component TEXT PRIMARY KEY, version INTEGER)")
    conn.execute("INSERT INTO backstay_schema VALUES ('tasks', 1)")
    for statement in (rows.DDL[0], _V1_ATTEMPTS, *rows.DDL[2:]):
        conn.execute(statement)
    conn.execute(
        "INSERT INTO backstay_attempts (operation_id, number, attempt_id, output_dir, "
        "started_at, outcome) VALUES ('w:t:run_01', 1, 'w:t:run_01:attempt_1', 'out', 1.0, "
        "'interrupted')"
    )
    conn.commit()
    conn.close()


def test_a_schema_1_file_is_migrated_and_its_attempts_have_no_candidate(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _v1_file(state)
    assert "candidate" not in _V1_ATTEMPTS
    with SQLiteTaskStore(state) as store:
        (attempt,) = store.attempts()
    assert attempt.candidate is None
    conn = sqlite3.connect(state / STATE_FILE)
    version = conn.execute("SELECT version FROM backstay_schema WHERE component = 'tasks'")
    assert version.fetchone() == (rows.SCHEMA_VERSION,)
    conn.close()
