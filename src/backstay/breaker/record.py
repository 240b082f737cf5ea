"""``BreakerRecord``: everything one breaker remembers, as one immutable value.

A store keeps one record per breaker name and replaces it whole on every change, so a
transition is a single compare-free write inside the store's atomic section. The record is
a ``NamedTuple`` rather than a frozen dataclass on purpose: a write path builds one per
call, and a tuple costs a fifth as much to build. ``to_dict`` / ``from_dict`` give the
JSON-ready form persistent stores keep.

Times (``opened_at``, ``half_opened_at``) are in the store's time base: monotonic seconds
for a process-local store, Unix seconds for a store shared across processes or restarts.

``probe_holders`` names the holders of the half-open probes still out, when their callers
gave a name (``CircuitBreaker.acquire(holder=...)``): a probe whose holder is known to be
gone (its process died) can then be given back at once instead of after
``probe_timeout_s``. Records written before it existed read as holding none.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

__all__ = ["CLOSED_RECORD", "BreakerRecord", "CircuitState"]

_FORMAT: Final = 1


class CircuitState(enum.StrEnum):
    """The three states of a circuit."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class BreakerRecord(NamedTuple):
    """The stored state of one breaker.

    ``epoch`` grows by one on every change of state (and on ``reset``); a permit remembers
    the epoch it was given in, and its outcome is ignored once the epoch has moved on.
    The count window is a bit mask, newest call in bit 0, a set bit a counted failure.
    The time window is a ring of ``(calls, failures)`` pairs, flattened into ``buckets``,
    whose newest bucket has index ``bucket_at``.
    """

    state: CircuitState = CircuitState.CLOSED
    epoch: int = 0
    consecutive: int = 0
    window_bits: int = 0
    window_calls: int = 0
    bucket_at: int = 0
    buckets: tuple[int, ...] = ()
    opened_at: float | None = None
    half_opened_at: float | None = None
    probes: int = 0
    probe_successes: int = 0
    probe_holders: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready plain data; the inverse of ``from_dict``."""
        return {
            "format": _FORMAT,
            "state": self.state.value,
            "epoch": self.epoch,
            "consecutive": self.consecutive,
            "window_bits": format(self.window_bits, "x"),
            "window_calls": self.window_calls,
            "bucket_at": self.bucket_at,
            "buckets": list(self.buckets),
            "opened_at": self.opened_at,
            "half_opened_at": self.half_opened_at,
            "probes": self.probes,
            "probe_successes": self.probe_successes,
            "probe_holders": list(self.probe_holders),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BreakerRecord:
        """A record from ``to_dict`` output; ``ValueError`` when it is not one."""
        if data.get("format") != _FORMAT:
            raise ValueError(f"unknown breaker record format {data.get('format')!r}")
        opened_at = data["opened_at"]
        half_opened_at = data["half_opened_at"]
        return cls(
            state=CircuitState(data["state"]),
            epoch=int(data["epoch"]),
            consecutive=int(data["consecutive"]),
            window_bits=int(str(data["window_bits"]), 16),
            window_calls=int(data["window_calls"]),
            bucket_at=int(data["bucket_at"]),
            buckets=tuple(int(b) for b in data["buckets"]),
            opened_at=None if opened_at is None else float(opened_at),
            half_opened_at=None if half_opened_at is None else float(half_opened_at),
            probes=int(data["probes"]),
            probe_successes=int(data["probe_successes"]),
            probe_holders=tuple(str(h) for h in data.get("probe_holders", ())),
        )


CLOSED_RECORD: Final = BreakerRecord()
