"""``Executor``: where the engine's tasks are driven.

By default (``Engine(executor=None)``) the engine drives its tasks itself, in its own
event loop, at most ``concurrency`` at once. An executor takes that part over: the engine
still checks and records the specs (``run``) or reads the stored tasks (``resume``), then
hands the records to ``executor.drive``, which must see each of them driven — by
``Engine.drive_task`` in some process that opened the same state — before it returns.

The executor only places work. Whether a task runs, waits, is retried or is given up is
decided where it is driven, under the task's operation lease, by the same driver and
policy as always; an executor that loses a worker places the task again, and the lease
makes that safe (a finished task is never dispatched again, a running one never twice).
``backstay.executors.RayExecutor`` places tasks on a Ray cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

if TYPE_CHECKING:
    from backstay.engine.records import TaskRecord
    from backstay.engine.runner import Engine

__all__ = ["DEFAULT_CONCURRENCY", "Executor"]

# Agent runs are heavy (a CLI process each, provider rate limits shared): a few at a time.
# Here rather than in ``runner`` so that a command's --help shows it without the runner.
DEFAULT_CONCURRENCY: Final = 4


@runtime_checkable
class Executor(Protocol):
    """Drives an engine's tasks somewhere else; see the module docstring."""

    async def drive(self, engine: Engine, records: Sequence[TaskRecord]) -> None:
        """Return once every task of ``records`` has been driven as far as it goes now
        (or raise, leaving the store as the drivers left it)."""
        ...
