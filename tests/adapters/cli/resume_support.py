"""A session that dies mid-way, run by the engine through a real agent CLI inside the
test module's network namespace (``tests.adapters.cli_provider``), for the resume tests.

The session (the fake provider's scripted session): four turns, turn *i* a call of the
CLI's own shell tool running ``echo step-i >> notes.txt``, then the final text. The first
request at turn 3 is answered 529 (503 for OpenAI), and the CLI's own retries are off, so
the first attempt fails there with steps 1 and 2 done. A second attempt that continues the
session asks for turn 3 next; one that starts afresh asks for turn 1 again.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from backstay.adapters.contract import Adapter
from backstay.engine.records import AttemptRecord
from backstay.engine.runner import Engine
from backstay.engine.states import TaskState
from backstay.engine.task import TaskSpec
from backstay.testing.contract import CONTRACT_POLICY
from backstay.testing.events import capture_events
from backstay.testing.fakeclock import FakeClock

__all__ = ["RERUN_TURNS", "RESUMED_TURNS", "SESSION", "START", "STEPS", "Session", "run_session"]

START: Final = "start\n"
STEPS: Final = "".join(f"step-{i}\n" for i in range(1, 5))
SESSION: Final = {
    "session": {"turns": [{"shell": f"echo step-{i} >> notes.txt"} for i in range(1, 5)]},
    "faults": [{"fault": "overloaded", "turn": 3}],
}
# The requests by turn when the session was continued: turn 3 twice (the 529, then the
# resumed attempt's), every other turn once; turn 5 is the final answer.
RESUMED_TURNS: Final = {"1": 1, "2": 1, "3": 2, "4": 1, "5": 1}
# ... and when it started afresh: turns 1 and 2 twice.
RERUN_TURNS: Final = {"1": 2, "2": 2, "3": 2, "4": 1, "5": 1}


@dataclasses.dataclass(frozen=True, slots=True)
class Session:
    """What the engine did with the task."""

    spec: TaskSpec
    state: TaskState
    attempts: tuple[AttemptRecord, ...]
    state_dir: Path
    events: list[dict[str, Any]]

    @property
    def notes(self) -> str:
        return (self.spec.workspace / "notes.txt").read_text()

    def log(self, index: int = -1) -> str:
        return (Path(self.attempts[index].output_dir) / "agent.log").read_text()

    def metrics(self, index: int) -> dict[str, Any]:
        path = Path(self.attempts[index].output_dir) / "metrics.json"
        data: dict[str, Any] = json.loads(path.read_text())
        return data

    def named(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == name]


def run_session(
    adapter: Adapter,
    *,
    tmp_path: Path,
    clock: FakeClock,
    model: str,
    env: Mapping[str, str],
    config: Mapping[str, Any],
    timeout_s: float = 120.0,
) -> Session:
    """Run the task "append step-1 to notes.txt" on ``adapter`` through a real ``Engine``
    (SQLite state under ``tmp_path``) until it ends."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(START)
    spec = TaskSpec(
        workflow_id="resume",
        task_id="append",
        adapter=adapter.name,
        model=model,
        workspace=workspace,
        timeout_s=timeout_s,
        prompt="Append the four steps to notes.txt with your shell tool.",
        env=env,
        config=config,
        policy=CONTRACT_POLICY,
    )
    state_dir = tmp_path / "state"
    with (
        capture_events() as events,
        Engine(state_dir, adapters={adapter.name: adapter}, clock=clock, env=env) as engine,
    ):
        engine.run_sync([spec])
        record = engine.store.task(spec.operation_id)
        assert record is not None
        attempts = engine.store.attempts(spec.operation_id)
    return Session(spec, record.state, attempts, state_dir, [e.to_dict() for e in events])
