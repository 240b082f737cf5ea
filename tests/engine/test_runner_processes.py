"""Two runner processes on one state directory: each task runs once, in one of them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.engine import batch_child

from backstay.engine import AttemptOutcome, TaskState

ROOT = Path(__file__).parents[2]


def test_two_runners_on_one_state_directory_run_each_task_once(tmp_path: Path) -> None:
    state_dir, work = tmp_path / "state", tmp_path / "work"
    runners = [subprocess.Popen(batch_child.command(state_dir, work), cwd=ROOT) for _ in range(2)]
    try:
        codes = [runner.wait(timeout=30) for runner in runners]
    finally:
        for runner in runners:
            if runner.poll() is None:
                runner.kill()
                runner.wait(timeout=5)
    with batch_child.engine(state_dir) as eng:
        summary = eng.summary()
        attempts = {t.operation_id: eng.store.attempts(t.operation_id) for t in eng.store.tasks()}
    assert codes == [0, 0]
    assert summary.count(TaskState.SUCCEEDED) == batch_child.TASKS
    for operation_id, rows in attempts.items():
        assert [a.outcome for a in rows] == [AttemptOutcome.FAILED, AttemptOutcome.SUCCEEDED]
        assert batch_child.dispatches(work, operation_id) == 2
