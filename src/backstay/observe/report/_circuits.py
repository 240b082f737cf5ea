"""The report's circuits section: per circuit breaker (``adapter/model``, or the key a
batch chose), how often it opened and why, its probes, how often it closed again, the
waits of tasks that found it open, and where it stood last — from the circuit log."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from html import escape

from backstay.engine.circuit_log import CircuitChange, CircuitEntry

__all__ = ["circuits"]

_STATES = {
    CircuitChange.OPENED: "open",
    CircuitChange.HALF_OPENED: "half-open",
    CircuitChange.CLOSED: "closed",
}


def _row(breaker: str, entries: list[CircuitEntry]) -> str:
    changes = Counter(e.change for e in entries)
    reasons = Counter(
        e.reason.replace("_", " ") for e in entries if e.change is CircuitChange.OPENED
    )
    waited = sum(e.wait_s or 0.0 for e in entries if e.change is CircuitChange.WAITED)
    moves = [e for e in entries if e.change in _STATES]
    last = "closed" if not moves else _STATES[moves[-1].change]
    why = ", ".join(f"{reason or 'tripped'} ×{n}" for reason, n in reasons.most_common())
    cells = (
        breaker,
        str(changes[CircuitChange.OPENED]),
        why or "-",
        str(changes[CircuitChange.HALF_OPENED]),
        str(changes[CircuitChange.CLOSED]),
        f"{changes[CircuitChange.WAITED]} ({waited:.1f} s)",
        last,
    )
    return "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in cells) + "</tr>"


def circuits(entries: Iterable[CircuitEntry]) -> str:
    """The section's HTML: one row per circuit, or a line saying none opened."""
    by_breaker: defaultdict[str, list[CircuitEntry]] = defaultdict(list)
    for entry in sorted(entries, key=lambda e: e.at):
        by_breaker[entry.breaker].append(entry)
    if not by_breaker:
        return '<p class="none">No circuit opened: every provider and model answered.</p>'
    head = ("circuit", "opened", "why", "probes", "closed", "tasks waited", "last state")
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    rows = "".join(_row(breaker, entries) for breaker, entries in sorted(by_breaker.items()))
    return f"<table><thead><tr>{th}</tr></thead><tbody>{rows}</tbody></table>"
