"""Breaker events: frozen values with stable dotted names."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from backstay.breaker.events import CircuitClosed, CircuitHalfOpened, CircuitOpened
from backstay.breaker.record import CircuitState

AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_event_names_are_stable() -> None:
    assert (CircuitOpened.name, CircuitHalfOpened.name, CircuitClosed.name) == (
        "circuit.opened",
        "circuit.half_opened",
        "circuit.closed",
    )


def test_events_are_frozen() -> None:
    event = CircuitClosed(breaker="op", at=AT, from_state=CircuitState.OPEN, reason="reset")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.reason = "other"  # type: ignore[misc]


def test_the_name_is_not_a_field() -> None:
    event = CircuitHalfOpened(breaker="op", at=AT, reason="open_duration_elapsed", max_probes=1)
    assert event.name == "circuit.half_opened"
    assert "name" not in {f.name for f in dataclasses.fields(event)}
