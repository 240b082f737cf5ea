"""``health``'s open circuits are those ``prometheus.circuit_states`` finds (the metrics'
module is not imported for them)."""

from __future__ import annotations

import datetime as _dt
import itertools

from backstay.engine.circuit_log import CircuitChange, CircuitEntry
from backstay.observe.health import open_circuits
from backstay.observe.prometheus import circuit_states

_AT = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
_SHOWN = {1.0: "half-open", 2.0: "open"}


def _entry(breaker: str, change: CircuitChange) -> CircuitEntry:
    return CircuitEntry(breaker=breaker, change=change, at=_AT, operation_id=None, reason="r")


def test_open_circuits_are_the_metrics_open_and_half_open_ones() -> None:
    changes = list(CircuitChange)
    checked = 0
    # Every sequence of up to three changes of one circuit, beside a second circuit.
    for n in range(4):
        for seq in itertools.product(changes, repeat=n):
            entries = (*(_entry("a", c) for c in seq), _entry("b", CircuitChange.OPENED))
            expected = {
                name: _SHOWN[value]
                for name, value in circuit_states(entries).items()
                if value in _SHOWN
            }
            assert open_circuits(entries) == expected, seq
            checked += 1
    assert checked == 1 + 4 + 16 + 64


def test_a_wait_changes_no_circuits_state() -> None:
    entries = (_entry("a", CircuitChange.OPENED), _entry("a", CircuitChange.WAITED))
    assert open_circuits(entries) == {"a": "open"}
    assert open_circuits((_entry("a", CircuitChange.WAITED),)) == {}
