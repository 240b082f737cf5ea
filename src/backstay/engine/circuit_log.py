"""``CircuitLog``: what the engine's circuit breakers did during a batch.

The breakers' own records (``backstay.breaker``) say only where each circuit stands now.
The summary of a batch needs its history: how often a circuit opened, and how long tasks
waited for open circuits. Each of those is one ``CircuitEntry`` in the state file
(``<state_dir>/state.sqlite``, its own component ``circuits``, table
``backstay_circuit_log``), written as it happens:

* ``opened``: a circuit opened (it tripped, or a probe failed); ``operation_id`` is the
  task whose attempt's failure opened it;
* ``half_opened``: an open circuit let a probe through (the task that asked);
* ``closed``: the probes succeeded, or a reset (the task whose probe closed it);
* ``waited``: a task found its circuit open and waits ``wait_s``; written BEFORE it sleeps.

A waited entry is a wait, never an attempt: the task's attempt count does not move.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
from collections.abc import Collection
from typing import Any, Protocol, runtime_checkable

__all__ = ["CircuitChange", "CircuitEntry", "CircuitLog"]


class CircuitChange(enum.StrEnum):
    """What happened to a circuit, or what a task did about it."""

    OPENED = "opened"
    HALF_OPENED = "half_opened"
    CLOSED = "closed"
    WAITED = "waited"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CircuitEntry:
    """One line of the log; see the module docstring for which fields each change sets."""

    breaker: str
    change: CircuitChange
    at: _dt.datetime
    operation_id: str | None = None
    reason: str = ""
    wait_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "breaker": self.breaker,
            "change": str(self.change),
            "at": self.at.isoformat(),
            "operation_id": self.operation_id,
            "reason": self.reason,
            "wait_s": self.wait_s,
        }


@runtime_checkable
class CircuitLog(Protocol):
    """Where circuit entries are written and read back (SQLite, or a shared store)."""

    def add(self, entry: CircuitEntry) -> None: ...

    def entries(self, operation_ids: Collection[str] | None = None) -> tuple[CircuitEntry, ...]: ...

    def close(self) -> None: ...
