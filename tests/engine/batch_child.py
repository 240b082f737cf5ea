"""A batch of mock-agent tasks run by an Engine in its own process, for the kill -9 tests.

Run as ``python batch_child.py STATE_DIR WORK_DIR``. Each task fails once (an overloaded
provider) and then succeeds, each attempt a real agent subprocess that takes a moment, so
that a kill lands in every phase: dispatching, waiting to retry, recording.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Final

from backstay.adapters.mock import MockAdapter
from backstay.engine import Engine, TaskSpec
from backstay.idempotency.settings import GuardSettings
from backstay.policy.retry import RetryPolicy

TASKS: Final = 6
CONCURRENCY: Final = 2
# Short leases: a resumed batch takes a killed runner's tasks over within a second.
LEASES: Final = GuardSettings(lease_ttl_s=1.0, poll_initial_s=0.05, poll_max_s=0.2)
POLICY: Final = RetryPolicy(
    name="kill-test", max_attempts=6, initial_delay_s=0.2, max_delay_s=0.2, jitter=0.0
)
SCENARIO: Final = {
    "attempts": [
        [{"sleep": 0.15}, {"error": "overloaded"}],
        [
            {"sleep": 0.15},
            {"write_file": "out/answer.txt", "text": "42"},
            {"result": "done", "input_tokens": 10, "output_tokens": 5},
        ],
    ]
}


def specs(work: Path) -> list[TaskSpec]:
    """The batch: one workspace per task; the mock counts its dispatches in ``work/mock``."""
    out = []
    for i in range(TASKS):
        workspace = work / f"ws{i}"
        workspace.mkdir(parents=True, exist_ok=True)
        config = {"scenario": SCENARIO, "state_dir": str(work / "mock")}
        out.append(
            TaskSpec(
                workflow_id="kill",
                task_id=f"task{i}",
                adapter="mock",
                model="m",
                workspace=workspace,
                timeout_s=30.0,
                prompt="answer",
                config=config,
                policy=POLICY,
            )
        )
    return out


def dispatches(work: Path, operation_id: str) -> int:
    """How often the mock agent was started for ``operation_id``: its own count (one byte
    per start, in ``work/mock``), kept apart from the engine's records."""
    digest = hashlib.sha256(operation_id.encode()).hexdigest()[:32]
    path = work / "mock" / f"{digest}.attempts"
    return path.stat().st_size if path.exists() else 0


def command(state_dir: Path, work: Path) -> list[str]:
    """The command line running this batch in a new process."""
    return [sys.executable, str(Path(__file__)), str(state_dir), str(work)]


def engine(state_dir: Path) -> Engine:
    return Engine(
        state_dir,
        adapters={"mock": MockAdapter},
        concurrency=CONCURRENCY,
        guard_settings=LEASES,
        env={},
    )


def main(state_dir: str, work: str) -> int:
    with engine(Path(state_dir)) as eng:
        summary = eng.run_sync(specs(Path(work)))
    return 0 if summary.finished else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
