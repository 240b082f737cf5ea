"""kill -9: a batch killed in a real process at several points resumes to the end, and no
task that succeeded runs twice, and nothing is lost."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.adapters.support import descendants, gone_within
from tests.engine import batch_child

from backstay.engine import AttemptOutcome, TaskState
from backstay.engine.events import TaskResumed
from backstay.idempotency.records import Done
from backstay.store import STATE_FILE
from backstay.testing import capture_events

ROOT = Path(__file__).parents[2]
WAIT_S = 20.0


# When to kill: once this count, read from the state file, reaches the threshold.
ATTEMPTS = "SELECT count(*) FROM backstay_attempts"
RETRYING = "SELECT count(*) FROM backstay_tasks WHERE state = 'retrying'"
SUCCEEDED = "SELECT count(*) FROM backstay_tasks WHERE state = 'succeeded'"
KILL_POINTS = [
    pytest.param(ATTEMPTS, 1, id="first-attempt-running"),
    pytest.param(RETRYING, 1, id="waiting-to-retry"),
    pytest.param(SUCCEEDED, 3, id="half-succeeded"),
    pytest.param(ATTEMPTS, 10, id="last-attempts"),
]


def _count(state_dir: Path, query: str) -> int:
    """``query``'s count now, read as another process would (read-only)."""
    uri = f"file:{state_dir / STATE_FILE}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            return int(conn.execute(query).fetchone()[0])
    except sqlite3.Error:  # the file or its tables do not exist yet
        return 0


def _kill_9(proc: subprocess.Popen[bytes]) -> list[int]:
    """SIGKILL the runner; the pids of its agents, which the kill leaves running."""
    os.kill(proc.pid, signal.SIGSTOP)  # frozen: it starts no agent while we look
    agents = descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=5)
    return agents


def _run_until(
    state_dir: Path,
    work: Path,
    query: str,
    threshold: int,
    *,
    scenario: str = "flaky",
    ready: Callable[[], bool] = lambda: True,
) -> list[int]:
    """Start the batch in a child process; kill it once ``query`` counts ``threshold``
    and ``ready()`` holds; the pids of the agents it left running."""
    proc = subprocess.Popen(batch_child.command(state_dir, work, scenario), cwd=ROOT)
    agents: list[int] = []
    try:
        deadline = time.monotonic() + WAIT_S
        while _count(state_dir, query) < threshold or not ready():
            assert proc.poll() is None, "the batch ended before it could be killed"
            assert time.monotonic() < deadline, f"{query} < {threshold} after {WAIT_S} s"
            time.sleep(0.01)
        assert proc.poll() is None
        agents = _kill_9(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
    return agents


def _stop(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(("query", "threshold"), KILL_POINTS)
def test_a_batch_killed_mid_way_resumes_to_the_end_without_running_a_success_twice(
    tmp_path: Path, query: str, threshold: int
) -> None:
    state_dir, work = tmp_path / "state", tmp_path / "work"
    agents = _run_until(state_dir, work, query, threshold)
    try:
        with batch_child.engine(state_dir) as eng:
            summary = eng.resume_sync()
            tasks = eng.store.tasks()
            claims = [eng.operations.claim(t.operation_id, "checker", 1.0) for t in tasks]
            attempts = {t.operation_id: eng.store.attempts(t.operation_id) for t in tasks}
    finally:
        _stop(agents)
    assert len(tasks) == batch_child.TASKS  # nothing lost
    assert summary.count(TaskState.SUCCEEDED) == batch_child.TASKS
    assert all(isinstance(claim, Done) for claim in claims)
    for task in tasks:
        rows = attempts[task.operation_id]
        outcomes = [a.outcome for a in rows]
        assert [a.number for a in rows] == list(range(1, len(rows) + 1))
        assert outcomes.count(AttemptOutcome.SUCCEEDED) == 1
        assert outcomes[-1] is AttemptOutcome.SUCCEEDED
        assert AttemptOutcome.RUNNING not in outcomes
        # Every dispatch was recorded before it happened.
        assert batch_child.dispatches(work, task.operation_id) <= len(rows)


def test_a_resumed_batch_dispatches_nothing_more_once_finished(tmp_path: Path) -> None:
    state_dir, work = tmp_path / "state", tmp_path / "work"
    agents = _run_until(state_dir, work, ATTEMPTS, 5)
    try:
        with batch_child.engine(state_dir) as eng:
            eng.resume_sync()
            ids = [t.operation_id for t in eng.store.tasks()]
            before = [batch_child.dispatches(work, op) for op in ids]
            summary = eng.resume_sync()
    finally:
        _stop(agents)
    assert [batch_child.dispatches(work, op) for op in ids] == before
    assert summary.finished


def test_resume_kills_the_agents_a_killed_runner_left_running(tmp_path: Path) -> None:
    state_dir, work = tmp_path / "state", tmp_path / "work"
    ops = [spec.operation_id for spec in batch_child.specs(work, "hang")]

    def every_agent_started() -> bool:  # the mock counts its own starts
        return all(batch_child.dispatches(work, op) for op in ops)

    agents = _run_until(
        state_dir, work, ATTEMPTS, len(ops), scenario="hang", ready=every_agent_started
    )
    try:
        assert agents, "the runner had agents running when it was killed"
        assert not any(gone_within(pid, 0.5) for pid in agents), "the kill left them running"
        with capture_events() as events, batch_child.engine(state_dir) as eng:
            summary = eng.resume_sync()
        assert all(gone_within(pid) for pid in agents)
    finally:
        _stop(agents)
    assert summary.count(TaskState.SUCCEEDED) == batch_child.tasks("hang")
    resumed = [e.reason for e in events if isinstance(e, TaskResumed)]
    assert len(resumed) == batch_child.CONCURRENCY
    killed = [re.search(r"(\d+) process\(es\) it left running were killed", r) for r in resumed]
    assert all(killed), resumed
    assert sum(int(m.group(1)) for m in killed if m) == len(agents), resumed
