"""The executors' events, emitted by the driver of a batch.

| event | name | when |
|---|---|---|
| ``WorkerLost`` | ``task.worker_lost`` | the process or node of a run died before it returned |

The task's own events (``task.started`` … ``task.succeeded``) are emitted where the task is
driven, recorded there in ``events.jsonl``, and emitted again by the driver once the run
returns.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import ClassVar

from backstay.events import Event

__all__ = ["WorkerLost"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WorkerLost(Event):
    """The worker driving ``operation`` died (``error``: Ray's exception, such as
    ``WorkerCrashedError``); ``losses`` so far in this batch; whether the task was placed
    again (``False``: it is left, as the store has it, for ``backstay resume``)."""

    name: ClassVar[str] = "task.worker_lost"
    level: ClassVar[int] = logging.WARNING
    error: str
    losses: int
    placed_again: bool
