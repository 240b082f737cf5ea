"""What the report adds up over every attempt, a page at a time: ``AttemptTotals``.

One pass over the store's ``attempt_facts`` gives the counts of the failures and waits
sections and the extent of the timeline; a second pass over ``attempt_times``
(``timeline_bins``) places each attempt in the timeline's bins once its extent is known.
The usage section adds up the tasks' lines (each task's attempts added up by its store,
``UsageByModel``). Nothing is kept per attempt, so memory stays flat however large the
batch.

Times are handled as whole microseconds, as the records' datetimes hold them (a stored
Unix time becomes the same microsecond ``datetime.fromtimestamp`` would make), so the
report's numbers are those of the records themselves.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Final

from backstay.engine.circuit_log import CircuitChange, CircuitEntry
from backstay.engine.report_reads import AttemptFact, AttemptTimes, TaskLine
from backstay.observe.genai import provider_name
from backstay.taxonomy import CODES, canonical_code

__all__ = ["AttemptTotals", "Timeline", "UsageByModel", "add_up", "micros", "timeline_bins"]

BINS: Final = 240
MAX_MARKS: Final = 200
_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MICRO: Final = _dt.timedelta(microseconds=1)
_FAILED: Final = "failed"


def micros(seconds: float) -> int:
    """The whole microseconds ``datetime.fromtimestamp(seconds)`` keeps (half to even)."""
    frac, whole = math.modf(seconds)
    return int(whole) * 1_000_000 + round(frac * 1e6)


def _moment(at: _dt.datetime) -> int:
    return (at - _EPOCH) // _MICRO


@functools.lru_cache(maxsize=256)
def _kind(code: str) -> tuple[str, str]:
    """``(kind, canonical code)`` of a stored failure code."""
    canonical = canonical_code(code)
    return str(CODES[canonical].kind), canonical


@dataclasses.dataclass(slots=True, kw_only=True)
class AttemptTotals:
    """Every attempt added up (see the module docstring); filled by ``add_up``."""

    attempts: int = 0
    kinds: Counter[str] = dataclasses.field(default_factory=Counter)
    codes: Counter[tuple[str, str]] = dataclasses.field(default_factory=Counter)
    waits: Counter[str] = dataclasses.field(default_factory=Counter)
    waited_s: defaultdict[str, float] = dataclasses.field(
        default_factory=lambda: defaultdict(float)
    )
    retries: Counter[str] = dataclasses.field(default_factory=Counter)
    first_start: int | None = None
    last_end: int | None = None
    running: bool = False


def add_up(pages: Iterable[Sequence[AttemptFact]]) -> AttemptTotals:
    """The totals of the attempts of ``pages`` (in the order they were made)."""
    out = AttemptTotals()
    first: float | None = None
    last: float | None = None
    for page in pages:
        out.attempts += len(page)
        for a in page:
            if first is None or a.started_at < first:
                first = a.started_at
            if a.ended_at is None:
                out.running = True
            elif last is None or a.ended_at > last:
                last = a.ended_at
            if a.code is not None:
                kind, code = _kind(a.code)
                out.kinds[kind] += 1
                out.codes[kind, code] += 1
                if a.delay_s is not None:
                    out.retries[kind] += 1
                    reason = "retry_after" if a.retry_after else "backoff"
                    out.waits[reason] += 1
                    out.waited_s[reason] += a.delay_s
    # micros() never reverses an order: the extremes of the times are those of their micros.
    out.first_start = None if first is None else micros(first)
    out.last_end = None if last is None else micros(last)
    return out


class UsageByModel:
    """Tokens and cost per ``(provider, model)`` of the tasks' own models, added up a task
    at a time: ``[input, output, cache read, cache write, cost USD]``."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], list[float]] = {}

    def add(self, line: TaskLine) -> None:
        if not line.attempts:
            return
        key = (provider_name(line.adapter, line.model), line.model)
        row = self.rows.setdefault(key, [0, 0, 0, 0, 0.0])
        row[0] += line.input_tokens
        row[1] += line.output_tokens
        row[2] += line.cache_read_tokens
        row[3] += line.cache_write_tokens
        row[4] += line.cost_usd


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Timeline:
    """The timeline's data: its span, the attempts running, failing and the tasks waiting
    per bin, and the circuit changes to mark ``(offset s, colour key, label)``."""

    span_s: float
    running: list[int]
    failed: list[int]
    waiting: list[int]
    marks: list[tuple[float, CircuitChange, str]]


def _running_sum(diff: list[int]) -> list[int]:
    out, level = [], 0
    for value in diff[:-1]:
        level += value
        out.append(level)
    return out


def timeline_bins(
    totals: AttemptTotals,
    pages: Iterable[Sequence[AttemptTimes]],
    circuits: Sequence[CircuitEntry],
    *,
    taken_at: _dt.datetime,
) -> Timeline | None:
    """The timeline of the attempts of ``pages`` (``None`` when there were none): a
    running attempt ends at ``taken_at``."""
    if totals.first_start is None:
        return None
    t0 = totals.first_start
    now = _moment(taken_at)
    ends = [e for e in (totals.last_end, now if totals.running else None) if e is not None]
    span_us = max([max(ends) - t0, *(_moment(e.at) - t0 for e in circuits)])
    span = span_us / 10**6 or 1.0

    def at(seconds: float) -> int:
        return min(max(int(seconds / span * BINS), 0), BINS - 1)

    running = [0] * (BINS + 1)
    waiting = [0] * (BINS + 1)
    failed = [0] * BINS
    for page in pages:
        for a in page:
            start_s = (micros(a.started_at) - t0) / 10**6
            end_s = ((now if a.ended_at is None else micros(a.ended_at)) - t0) / 10**6
            running[min(max(int(start_s / span * BINS), 0), BINS - 1)] += 1
            end_bin = min(max(int(end_s / span * BINS), 0), BINS - 1)
            running[end_bin + 1] -= 1
            if a.outcome == _FAILED:
                failed[end_bin] += 1
            if a.delay_s:
                waiting[end_bin] += 1
                waiting[at(end_s + a.delay_s) + 1] -= 1
    marks: list[tuple[float, CircuitChange, str]] = []
    for entry in circuits:
        offset = (_moment(entry.at) - t0) / 10**6
        if entry.change is CircuitChange.WAITED:
            waiting[at(offset)] += 1
            waiting[at(offset + (entry.wait_s or 0.0)) + 1] -= 1
        elif len(marks) < MAX_MARKS:
            marks.append((offset, entry.change, f"{entry.breaker} {entry.change}"))
    return Timeline(
        span_s=span,
        running=_running_sum(running),
        failed=failed,
        waiting=_running_sum(waiting),
        marks=marks,
    )
