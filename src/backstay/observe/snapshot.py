"""``StateSnapshot``: everything a state directory holds about its batch, read at once —
what the metrics, the health check and the report are computed from.

``StateReader`` keeps the state file's connections open between reads (a server reads
on every scrape); it never writes, and it is safe while a batch runs (SQLite readers do
not block the writer).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import threading
from pathlib import Path

from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.engine.circuit_log import CircuitEntry, SQLiteCircuitLog
from backstay.engine.records import AttemptRecord, Escalation, TaskRecord
from backstay.engine.sqlite_tasks import STATE_FILE, SQLiteTaskStore
from backstay.errors import ConfigError

__all__ = ["StateReader", "StateSnapshot", "read_state"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StateSnapshot:
    """The tasks, attempts, escalations and circuit log of a state directory at ``taken_at``."""

    state_dir: Path
    tasks: tuple[TaskRecord, ...]
    attempts: tuple[AttemptRecord, ...]
    escalations: tuple[Escalation, ...]
    circuits: tuple[CircuitEntry, ...]
    taken_at: _dt.datetime


class StateReader:
    """Reads snapshots of ``state_dir``, which must hold a batch (``ConfigError`` naming
    it otherwise)."""

    def __init__(self, state_dir: str | os.PathLike[str], *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.state_dir = Path(state_dir)
        if not (self.state_dir / STATE_FILE).is_file():
            what = "does not exist" if not self.state_dir.exists() else f"holds no {STATE_FILE}"
            raise ConfigError(f"{self.state_dir} {what}: no batch ran there", where="--state-dir")
        self._clock = clock
        self._lock = threading.Lock()
        self._tasks = SQLiteTaskStore(self.state_dir, secrets={})
        try:
            self._circuits = SQLiteCircuitLog(self.state_dir)
        except BaseException:
            self._tasks.close()
            raise

    def read(self) -> StateSnapshot:
        with self._lock:
            taken_at = self._clock.now()
            return StateSnapshot(
                state_dir=self.state_dir,
                tasks=self._tasks.tasks(),
                attempts=self._tasks.attempts(),
                escalations=self._tasks.escalations(),
                circuits=self._circuits.entries(),
                taken_at=taken_at,
            )

    def close(self) -> None:
        with self._lock:
            try:
                self._circuits.close()
            finally:
                self._tasks.close()

    def __enter__(self) -> StateReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_state(state_dir: str | os.PathLike[str]) -> StateSnapshot:
    """One snapshot of ``state_dir``."""
    with StateReader(state_dir) as reader:
        return reader.read()
