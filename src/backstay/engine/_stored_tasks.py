"""``StoredTasks``: the records of some tasks, each read from the store when asked for.

What the engine hands an ``Executor`` (``Executor.drive`` takes a sequence of records):
a batch of 100,000 tasks is a list of operation ids, not 100,000 records held at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

from backstay.engine.records import TaskRecord
from backstay.engine.taskstore import TaskStore

__all__ = ["StoredTasks"]


class StoredTasks(Sequence[TaskRecord]):
    """The records of ``operation_ids`` (each registered in ``store``), in that order."""

    def __init__(self, store: TaskStore, operation_ids: Sequence[str]) -> None:
        self._store = store
        self._ids = operation_ids

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, index: int) -> TaskRecord: ...

    @overload
    def __getitem__(self, index: slice) -> StoredTasks: ...

    def __getitem__(self, index: int | slice) -> TaskRecord | StoredTasks:
        if isinstance(index, slice):
            return StoredTasks(self._store, self._ids[index])
        operation_id = self._ids[index]
        record = self._store.task(operation_id)
        if record is None:
            raise LookupError(f"task {operation_id!r} was never registered")
        return record
