"""A batch of mock-agent tasks run by an Engine in its own process, for the kill -9 tests.

Run as ``python batch_child.py STATE_DIR WORK_DIR [SCENARIO]``. In the ``flaky`` scenario
each task fails once (an overloaded provider) and then succeeds, each attempt a real agent
subprocess that takes a moment, so that a kill lands in every phase: dispatching, waiting
to retry, recording. In the ``hang`` scenario each first attempt's agent runs for a long
time (it is still running when the runner is killed) and the second succeeds.

The leases last an hour: a resumed batch must take a killed runner's leases over because
their holder is dead, not wait them out (it gives up waiting after ``WAIT_TIMEOUT_S``).
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
WAIT_TIMEOUT_S: Final = 15.0
LEASES: Final = GuardSettings(
    lease_ttl_s=3600.0, wait_timeout_s=WAIT_TIMEOUT_S, poll_initial_s=0.05, poll_max_s=0.2
)
POLICY: Final = RetryPolicy(
    name="kill-test", max_attempts=6, initial_delay_s=0.2, max_delay_s=0.2, jitter=0.0
)
_SUCCESS: Final = [
    {"sleep": 0.15},
    {"write_file": "out/answer.txt", "text": "42"},
    {"result": "done", "input_tokens": 10, "output_tokens": 5},
]
SCENARIOS: Final = {
    "flaky": {"attempts": [[{"sleep": 0.15}, {"error": "overloaded"}], _SUCCESS]},
    "hang": {"attempts": [[{"sleep": 60}, {"error": "overloaded"}], _SUCCESS]},
}


def tasks(scenario: str) -> int:
    """How many tasks the scenario's batch has: in ``hang``, one per concurrent slot, all
    hanging at once."""
    return CONCURRENCY if scenario == "hang" else TASKS


def specs(work: Path, scenario: str = "flaky") -> list[TaskSpec]:
    """The batch: one workspace per task; the mock counts its dispatches in ``work/mock``."""
    out = []
    for i in range(tasks(scenario)):
        workspace = work / f"ws{i}"
        workspace.mkdir(parents=True, exist_ok=True)
        config = {"scenario": SCENARIOS[scenario], "state_dir": str(work / "mock")}
        out.append(
            TaskSpec(
                workflow_id="kill",
                task_id=f"task{i}",
                adapter="mock",
                model="m",
                workspace=workspace,
                timeout_s=120.0,
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


def command(state_dir: Path, work: Path, scenario: str = "flaky") -> list[str]:
    """The command line running this batch in a new process."""
    return [sys.executable, str(Path(__file__)), str(state_dir), str(work), scenario]


def engine(state_dir: Path) -> Engine:
    # No circuit breaker: every task fails once with a counted kind, which would trip it
    # (and make both runners wait); these tests are about leases and kills.
    return Engine(
        state_dir,
        adapters={"mock": MockAdapter},
        concurrency=CONCURRENCY,
        guard_settings=LEASES,
        env={},
        breaker=None,
    )


def main(state_dir: str, work: str, scenario: str = "flaky") -> int:
    with engine(Path(state_dir)) as eng:
        summary = eng.run_sync(specs(Path(work), scenario))
    return 0 if summary.finished else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
