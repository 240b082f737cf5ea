"""kill -9 while a batch is recorded: a runner killed while it registers its tasks leaves
the batch cleanly not started (no task recorded, nothing for ``resume`` to run, the batch
runs whole when started again), and one killed once they are recorded leaves every task
for ``resume``. On SQLite and on a real Redis (killed after its first page was staged).
(Registering a batch again once nothing was recorded: tests/store/test_task_register_each.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
from tests.engine import register_kill_child as child

from backstay.engine import Engine, TaskState
from backstay.store.location import StoreLocation, parse_store
from backstay.store.open import open_stores
from backstay.store.redis import _register_pages
from backstay.store.redis._client import RedisConnection
from backstay.testing import ScriptedAdapter

ROOT: Final = Path(__file__).parents[2]
WAIT_S: Final = 60.0
REGISTERING, DRIVING = 2, 3  # the passes of ``Engine.run`` over its specs
# More than one page: on Redis the first page is staged when the runner is killed.
TASKS: Final = _register_pages.PAGE + 200


def _killed_at(state_dir: Path, tasks: int, stop_pass: int, stop_at: int, url: str) -> None:
    """Run the child's batch until it stops at (``stop_pass``, ``stop_at``); SIGKILL it."""
    argv = [sys.executable, child.__file__, str(state_dir), str(tasks), str(stop_pass),
            str(stop_at), url]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks at most HOLD_S: the child exits after it
        assert line == b"stopped\n", proc.stderr.read() if proc.stderr else b""
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=WAIT_S) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=WAIT_S)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def _engine(state_dir: Path, url: str, adapter: ScriptedAdapter) -> Engine:
    stores = open_stores(parse_store(url), state_dir=state_dir, secrets={}) if url else None
    return Engine(state_dir, adapters={adapter.name: adapter}, env={}, stores=stores)


@pytest.fixture(params=["sqlite", "redis"])
def url(request: pytest.FixtureRequest) -> str:
    if request.param == "sqlite":
        return ""
    location: StoreLocation = request.getfixturevalue("redis_location")
    return str(location.url)


def _staged(url: str) -> list[bytes]:
    if not url:
        return []
    conn = RedisConnection(parse_store(url))
    try:
        return list(conn.client.scan_iter(match=conn.key("tasks", "staging", "*")))
    finally:
        conn.close()


def test_a_runner_killed_while_it_registers_leaves_the_batch_not_started(
    tmp_path: Path, url: str
) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    _killed_at(state_dir, TASKS, REGISTERING, TASKS - 100, url)
    adapter = ScriptedAdapter()
    with _engine(state_dir, url, adapter) as engine:
        assert engine.store.tasks() == ()
        summary = engine.resume_sync()
        assert (sum(summary.by_state.values()), adapter.calls) == (0, [])
        assert sum(engine.store.state_counts().values()) == 0  # type: ignore[attr-defined]
    # What was staged on Redis is no task; it expires on its own.
    assert len(_staged(url)) == (1 if url else 0)


def test_a_runner_killed_once_the_batch_is_recorded_leaves_every_task_to_resume(
    tmp_path: Path, url: str
) -> None:
    state_dir, tasks = tmp_path / "state", 30
    state_dir.mkdir()
    _killed_at(state_dir, tasks, DRIVING, 10, url)
    adapter = ScriptedAdapter()
    with _engine(state_dir, url, adapter) as engine:
        found = engine.store.tasks()
        done = sum(record.state is TaskState.SUCCEEDED for record in found)
        summary = engine.resume_sync()
    assert len(found) == tasks
    assert 0 < done <= 10  # the killed runner had finished some (the 11th was never read)
    assert summary.count(TaskState.SUCCEEDED) == tasks
    assert len(adapter.calls) == tasks - done  # and those are not run again
    assert _staged(url) == []
