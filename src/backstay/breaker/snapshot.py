"""``BreakerSnapshot``: what one breaker looks like right now, for people and dashboards."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Callable
from typing import Any

from backstay.breaker.record import BreakerRecord, CircuitState
from backstay.breaker.settings import BreakerSettings
from backstay.breaker.state import next_probe_at, totals

__all__ = ["BreakerSnapshot"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BreakerSnapshot:
    """One breaker's state and counts. Times are wall-clock (UTC).

    ``retry_after_s`` is the wait until the next probe is admitted: ``None`` when closed or
    when every half-open probe is out, ``0.0`` when a probe may go now.
    """

    name: str
    state: CircuitState
    consecutive_failures: int
    window_calls: int
    window_failures: int
    opened_at: _dt.datetime | None
    next_probe_at: _dt.datetime | None
    retry_after_s: float | None
    probes_in_flight: int
    probe_successes: int

    @property
    def failure_rate(self) -> float | None:
        """Counted failures over calls in the window; ``None`` while it is empty."""
        return self.window_failures / self.window_calls if self.window_calls else None

    @classmethod
    def of(
        cls,
        name: str,
        settings: BreakerSettings,
        record: BreakerRecord,
        *,
        now: float,
        to_wall: Callable[[float], _dt.datetime],
    ) -> BreakerSnapshot:
        """The snapshot of ``record`` at ``now``; ``to_wall`` maps store times to datetimes."""
        calls, failures = totals(settings, record, now) if settings.uses_window else (0, 0)
        probe_at = next_probe_at(settings, record)
        retry_after = None if probe_at is None else max(0.0, probe_at - now)
        half_open = record.state is CircuitState.HALF_OPEN
        return cls(
            name=name,
            state=record.state,
            consecutive_failures=record.consecutive,
            window_calls=calls,
            window_failures=failures,
            opened_at=None if record.opened_at is None else to_wall(record.opened_at),
            next_probe_at=None if probe_at is None else to_wall(max(probe_at, now)),
            retry_after_s=retry_after,
            probes_in_flight=record.probes - record.probe_successes if half_open else 0,
            probe_successes=record.probe_successes if half_open else 0,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready plain data (datetimes as ISO-8601)."""
        return {
            "name": self.name,
            "state": self.state.value,
            "consecutive_failures": self.consecutive_failures,
            "window_calls": self.window_calls,
            "window_failures": self.window_failures,
            "failure_rate": self.failure_rate,
            "opened_at": None if self.opened_at is None else self.opened_at.isoformat(),
            "next_probe_at": (
                None if self.next_probe_at is None else self.next_probe_at.isoformat()
            ),
            "retry_after_s": self.retry_after_s,
            "probes_in_flight": self.probes_in_flight,
            "probe_successes": self.probe_successes,
        }
