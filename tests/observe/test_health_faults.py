"""``store:writable`` on a real read-only file system: it fails even in WAL mode, where
SQLite grants ``BEGIN IMMEDIATE`` without writing (the ``-wal`` and ``-shm`` files of a
batch that runs, or was killed, are there)."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from tests.mounts import in_mount_namespace, needs_mounts
from tests.observe.support import finished_batch

from backstay.observe.health import check_writable
from backstay.store.sqlite.tasks import STATE_FILE

_CHECK = (
    f"{sys.executable} -c 'import json, pathlib; from backstay.observe.health import "
    'check_writable; print(json.dumps(check_writable(pathlib.Path("state"))))\''
)


@needs_mounts
def test_a_read_only_file_system_fails_even_in_wal_mode(tmp_path: Path) -> None:
    state = finished_batch(tmp_path)
    assert check_writable(state)["status"] == "pass"
    # A connection held open, as a running batch holds one: -wal and -shm stay.
    holder = sqlite3.connect(state / STATE_FILE)
    try:
        holder.execute("PRAGMA journal_mode=WAL")
        holder.execute("SELECT count(*) FROM backstay_tasks").fetchone()
        assert (state / f"{STATE_FILE}-wal").exists()
        assert (state / f"{STATE_FILE}-shm").exists()
        output = in_mount_namespace(
            f"mount --bind state state && mount -o remount,bind,ro state || exit 99\n{_CHECK}",
            tmp_path,
        )
    finally:
        holder.close()
    found = json.loads(output.strip().splitlines()[-1])
    assert found["status"] == "fail", output
    assert "read-only file system" in found["output"]


def test_a_writable_state_dir_passes(tmp_path: Path) -> None:
    state = finished_batch(tmp_path)
    assert check_writable(state) == {"status": "pass", "componentId": str(state / STATE_FILE)}
