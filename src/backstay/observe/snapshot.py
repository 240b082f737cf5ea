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
from backstay.engine.circuit_log import CircuitEntry, CircuitLog
from backstay.engine.records import AttemptRecord, Escalation, TaskRecord
from backstay.engine.stores import StoreBundle
from backstay.engine.taskstore import TaskStore
from backstay.errors import ConfigError
from backstay.store.location import StoreKind, StoreLocation
from backstay.store.open import open_stores
from backstay.store.sqlite.circuit_log import SQLiteCircuitLog
from backstay.store.sqlite.tasks import STATE_FILE, SQLiteTaskStore

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
    it otherwise); of the shared store ``location`` instead when it is a Redis one, which
    must hold a batch unless ``require_batch`` is False (a batch about to record one)."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        *,
        clock: Clock = SYSTEM_CLOCK,
        location: StoreLocation | None = None,
        require_batch: bool = True,
    ) -> None:
        self.state_dir = Path(state_dir)
        self._clock = clock
        self._lock = threading.Lock()
        if location is not None and location.kind is StoreKind.REDIS:
            bundle = open_stores(location, state_dir=self.state_dir, clock=clock, secrets={})
            if require_batch and not bundle.has_batch():
                bundle.close()
                raise ConfigError(
                    f"{location.display} holds no batch (namespace {location.namespace!r})",
                    where="--store",
                )
            self._tasks: TaskStore = bundle.tasks
            self._circuits: CircuitLog = bundle.circuit_log
            self._bundle: StoreBundle | None = bundle
            return
        self._bundle = None
        if not (self.state_dir / STATE_FILE).is_file():
            what = "does not exist" if not self.state_dir.exists() else f"holds no {STATE_FILE}"
            raise ConfigError(f"{self.state_dir} {what}: no batch ran there", where="--state-dir")
        self._tasks = SQLiteTaskStore(self.state_dir, secrets={})
        try:
            self._circuits = SQLiteCircuitLog(self.state_dir)
        except BaseException:
            self._tasks.close()
            raise

    @property
    def task_store(self) -> TaskStore:
        """The task store it reads (for a reader that takes only part of it)."""
        return self._tasks

    @property
    def circuit_log(self) -> CircuitLog:
        """The circuit log it reads."""
        return self._circuits

    def now(self) -> _dt.datetime:
        """The time of its clock (when a partial read was taken)."""
        return self._clock.now()

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
            if self._bundle is not None:
                self._bundle.close()
                return
            try:
                self._circuits.close()
            finally:
                self._tasks.close()

    def __enter__(self) -> StateReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_state(
    state_dir: str | os.PathLike[str], *, location: StoreLocation | None = None
) -> StateSnapshot:
    """One snapshot of ``state_dir`` (or of the shared store ``location``)."""
    with StateReader(state_dir, location=location) as reader:
        return reader.read()
