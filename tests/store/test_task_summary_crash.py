"""The counts per state after a crash mid-batch: a real batch process (the ``Engine`` over
an in-process adapter, ``summary_batch_child.py``) killed with SIGKILL while tasks run
leaves counts that agree with a full count of the records, on SQLite and on a real Redis,
and ``status`` shows the tasks it was running as ``interrupted``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from tests.cli.support import invoke
from tests.store import summary_batch_child as child
from tests.store.summary_support import full_count

from backstay.engine import TaskState
from backstay.engine.taskstore import TaskStore
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.tasks import RedisTaskStore
from backstay.store.sqlite.tasks import STATE_FILE, SQLiteTaskStore

# Succeeded tasks to wait for before the kill, and how long at most.
BEFORE_KILL: Final = 24
LIMIT_S: Final = 60.0
POLL_S: Final = 0.1


def _kill_when(proc: subprocess.Popen[bytes], ready: Callable[[], bool]) -> None:
    """SIGKILL ``proc`` (by its PID) once ``ready()``; fail if it ends or takes too long."""
    deadline = time.monotonic() + LIMIT_S
    try:
        while not ready():
            assert proc.poll() is None, "the batch ended before it was killed"
            assert time.monotonic() < deadline, f"no {BEFORE_KILL} tasks in {LIMIT_S} s"
            time.sleep(POLL_S)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=LIMIT_S)


def _check(store: TaskStore, extra: list[str], state: Path) -> None:
    counts = store.state_counts()  # type: ignore[attr-defined]
    assert counts == full_count(store)
    assert counts[TaskState.SUCCEEDED] >= BEFORE_KILL
    assert counts[TaskState.FAILED] >= 1
    assert counts[TaskState.PENDING] > 0  # it was killed mid-batch
    running = counts[TaskState.RUNNING]
    assert 1 <= running <= child.CONCURRENCY
    shown = invoke("status", "--state-dir", state, *extra, "--json")
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    assert (data["by_state"]["interrupted"], data["by_state"]["running"]) == (running, 0)
    assert data["total"] == child.TASKS


def _succeeded(read: Callable[[], dict[TaskState, int]]) -> Callable[[], bool]:
    def ready() -> bool:
        try:
            return read()[TaskState.SUCCEEDED] >= BEFORE_KILL
        except Exception:
            return False

    return ready


def _start(state: Path, *url: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, child.__file__, str(state), *url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_sqlite_counts_agree_with_a_full_count_after_a_kill(tmp_path: Path) -> None:
    state = tmp_path / "state"
    proc = _start(state)

    def read() -> dict[TaskState, int]:
        if not (state / STATE_FILE).exists():
            raise FileNotFoundError(state)
        with SQLiteTaskStore(state) as store:
            return store.state_counts()

    _kill_when(proc, _succeeded(read))
    with SQLiteTaskStore(state) as store:
        _check(store, [], state)


def test_redis_counts_agree_with_a_full_count_after_a_kill(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    state = tmp_path / "state"
    url = str(redis_location.url)
    proc = _start(state, url)
    conn = RedisConnection(redis_location)
    try:
        _kill_when(proc, _succeeded(lambda: RedisTaskStore(conn).state_counts()))
        _check(RedisTaskStore(conn), ["--store", url], state)
    finally:
        conn.close()
