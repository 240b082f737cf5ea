"""Where an agent CLI task's attempt starts in the engine: a ``StartKeeper``
(``backstay.adapters.cli.attempt_start``) kept in the task's ``run_NN/`` folder, the
previous attempt read from the task's records, the state folder never snapshotted.

The driver calls ``AttemptStarts.prepare`` before each dispatch and ``finished`` once the
task succeeded; the path the attempt took goes into its ``metrics.json``
(``attempt_start``).
"""

from __future__ import annotations

from pathlib import Path

from backstay.adapters.cli.attempt_start import (
    SESSION_HOME_DIR,
    SNAPSHOT_DIR,
    StartKeeper,
    StartPath,
)
from backstay.adapters.contract import Adapter, AgentRequest
from backstay.engine.records import AttemptRecord
from backstay.engine.task import TaskSpec

__all__ = ["SESSION_HOME_DIR", "SNAPSHOT_DIR", "AttemptStarts", "StartPath"]


class AttemptStarts:
    """The snapshot and the session home of the task ``spec`` under ``state_dir``."""

    def __init__(self, spec: TaskSpec, *, state_dir: Path, policy: str) -> None:
        self.keeper = StartKeeper(
            spec.run_dir(state_dir),
            operation=spec.operation_id,
            policy=policy,
            task_id=spec.task_id,
            exclude=(state_dir,),
        )

    def prepare(
        self,
        adapter: Adapter,
        request: AgentRequest,
        *,
        number: int,
        attempts: tuple[AttemptRecord, ...],
    ) -> tuple[AgentRequest, StartPath | None]:
        """``request`` for attempt ``number`` on ``adapter`` (``StartKeeper.prepare``),
        after the last of the task's earlier ``attempts``."""
        earlier = [a for a in attempts if a.number < number]
        previous = max(earlier, key=lambda a: a.number) if earlier else None
        return self.keeper.prepare(
            adapter,
            request,
            number=number,
            previous_failure=None if previous is None else previous.failure,
            previous_output=None if previous is None else Path(previous.output_dir),
        )

    def finished(self) -> None:
        """The task succeeded: its snapshot and session home are removed."""
        self.keeper.finished()
