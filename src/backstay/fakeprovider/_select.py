"""Which fault a request gets: every fault counts the requests its filters let through
and draws its own seeded random numbers, so the choice depends only on the scenario and
the order of requests, never on timing (except for outage windows, which are time)."""

from __future__ import annotations

import random

from backstay.fakeprovider.faults import Fault


class _Track:
    __slots__ = ("at_turn", "count", "fault", "outage_from", "rng", "targets")

    def __init__(self, fault: Fault, seed: int, index: int, started: float) -> None:
        self.fault = fault
        self.count = 0
        self.at_turn = 0
        self.targets = frozenset(fault.requests)
        # A string seed is hashed the same way on every run and platform.
        self.rng = random.Random(f"{seed}:{index}")  # noqa: S311 — reproducible, not secret
        outage = fault.outage
        self.outage_from: float | None = None
        if outage is not None and outage.start_request is None:
            self.outage_from = started + (outage.start_s or 0.0)

    def hits(self, now: float, turn: int | None) -> bool:
        """Count one more request (at ``turn`` of a session, or none) and say whether the
        fault applies to it."""
        self.count += 1
        fault = self.fault
        if fault.turn is not None:
            if turn != fault.turn:
                return False
            self.at_turn += 1
            return self.at_turn <= fault.turn_times
        if fault.first is not None:
            return self.count <= fault.first
        if self.targets:
            return self.count in self.targets
        if fault.probability is not None:
            return self.rng.random() < fault.probability
        if fault.outage is not None:
            if self.outage_from is None and self.count == fault.outage.start_request:
                self.outage_from = now
            return self.outage_from is not None and (
                self.outage_from <= now < self.outage_from + fault.outage.duration_s
            )
        return True


class FaultPicker:
    """The faults of a scenario with their counters. Not thread-safe: one event loop."""

    def __init__(self, faults: tuple[Fault, ...], *, seed: int, started: float) -> None:
        self._tracks = [_Track(f, seed, i, started) for i, f in enumerate(faults)]

    def pick(
        self, api: str, model: str, *, stream: bool, now: float, turn: int | None = None
    ) -> Fault | None:
        """The first fault that applies to this request (at ``turn`` of a scripted
        session, ``None`` outside one). Every fault whose filters let the request through
        counts it (and draws), chosen or not."""
        chosen: Fault | None = None
        for track in self._tracks:
            if (
                track.fault.admits(api, model, stream=stream)
                and track.hits(now, turn)
                and not chosen
            ):
                chosen = track.fault
        return chosen
