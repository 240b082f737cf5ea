"""kill -9 between two windows of a Redis batch's commit (``_register_pages``: the batch
staged, its first window registered): the batch's header says how far the commit got,
readers see it as still being recorded, and ``resume`` registers the rest (in order,
counted once) before it runs every task; no script holds Redis for more than a window."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import pytest
from tests.engine import register_kill_child as child
from tests.engine.support import WALL

from backstay.engine import Engine, TaskState
from backstay.engine.registration import PagedRegistration
from backstay.store.location import StoreLocation, parse_store
from backstay.store.open import open_stores
from backstay.store.redis import _register_pages
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.tasks import RedisTaskStore
from backstay.testing import ScriptedAdapter

ROOT: Final = Path(__file__).parents[2]
WAIT_S: Final = 60.0
TASKS: Final = 25
WINDOW: Final = 10  # windows of 10: the runner stops before its second


def _killed_between_windows(state_dir: Path, url: str) -> None:
    argv = [sys.executable, child.__file__, str(state_dir), str(TASKS), "0", "0", url]
    env = {**os.environ, "STOP_WINDOW": f"{WINDOW},2"}
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
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


def test_resume_registers_the_windows_a_killed_commit_left_then_runs_every_task(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    state_dir, url = tmp_path / "state", str(redis_location.url)
    state_dir.mkdir()
    _killed_between_windows(state_dir, url)
    adapter = ScriptedAdapter()
    stores = open_stores(parse_store(url), state_dir=state_dir, secrets={})
    with Engine(state_dir, adapters={adapter.name: adapter}, env={}, stores=stores) as engine:
        store = engine.store
        assert isinstance(store, PagedRegistration)
        header = store.registration()
        assert header is not None
        assert (header.recorded, header.total) == (WINDOW, TASKS)
        assert [r.task_id for r in engine.store.tasks()] == [f"t{i:05d}" for i in range(WINDOW)]
        summary = engine.resume_sync()
        assert store.registration() is None
        records = engine.store.tasks()
        counts = engine.store.state_counts()  # type: ignore[attr-defined]
    assert [r.task_id for r in records] == [f"t{i:05d}" for i in range(TASKS)]
    assert summary.count(TaskState.SUCCEEDED) == TASKS
    assert len(adapter.calls) == TASKS  # the killed runner had driven none
    assert counts[TaskState.SUCCEEDED] == TASKS
    assert sum(counts.values()) == TASKS
    conn = RedisConnection(parse_store(url))
    try:  # the staging list went with the last window
        assert list(conn.client.scan_iter(match=conn.key("tasks", "staging", "*"))) == []
    finally:
        conn.close()


@pytest.mark.parametrize("window", [1, 7, 30])
def test_a_batch_committed_in_windows_is_registered_whole_and_in_order(
    tmp_path: Path, redis_location: StoreLocation, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_register_pages, "WINDOW", window)
    adapter = ScriptedAdapter()
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    stores = open_stores(redis_location, state_dir=state_dir, secrets={})
    with Engine(state_dir, adapters={adapter.name: adapter}, env={}, stores=stores) as engine:
        specs = [child.task_spec(tmp_path, i) for i in range(TASKS)]
        assert engine.store.register_each(specs, at=engine.clock.now()) == TASKS
        assert [r.task_id for r in engine.store.tasks()] == [s.task_id for s in specs]
        assert engine.store.state_counts()[TaskState.PENDING] == TASKS  # type: ignore[attr-defined]
        assert isinstance(engine.store, PagedRegistration)
        assert engine.store.registration() is None


def test_a_window_sent_twice_registers_its_tasks_once(
    tmp_path: Path, redis_location: StoreLocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    commit = _register_pages._commit

    def twice(*args: Any, **kwargs: Any) -> Any:
        first = commit(*args, **kwargs)  # as a reply that came too late: sent again
        assert commit(*args, **kwargs) in (first, -1)
        return first

    monkeypatch.setattr(_register_pages, "WINDOW", 4)
    monkeypatch.setattr(_register_pages, "_commit", twice)
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    conn = RedisConnection(redis_location)
    try:
        store = RedisTaskStore(conn)
        specs = [child.task_spec(tmp_path, i) for i in range(TASKS)]
        assert store.register_each(specs, at=WALL) == TASKS
        assert [r.task_id for r in store.tasks()] == [s.task_id for s in specs]
        assert store.state_counts() == {**store.state_counts(), TaskState.PENDING: TASKS}
        assert sum(store.state_counts().values()) == TASKS
        assert store.finish_staged() == 0  # nothing left
    finally:
        conn.close()
