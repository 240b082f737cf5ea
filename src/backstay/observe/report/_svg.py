"""Charts as inline SVG: horizontal bars and the batch's timeline. Sizes are bounded by
the number of bars or time bins, never by the number of tasks."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Final

__all__ = ["bars", "timeline"]

_WIDTH: Final = 720
_BAR_H: Final = 18
_LABEL_W: Final = 180


def bars(items: Sequence[tuple[str, float, str]], *, unit: str = "") -> str:
    """One horizontal bar per ``(label, value, colour)``, scaled to the largest."""
    if not items:
        return '<p class="none">none</p>'
    top = max(value for _, value, _ in items) or 1.0
    height = len(items) * (_BAR_H + 6) + 4
    room = _WIDTH - _LABEL_W - 90
    rows = []
    for i, (label, value, colour) in enumerate(items):
        y = 2 + i * (_BAR_H + 6)
        w = max(1.0, room * value / top)
        rows.append(
            f'<text x="{_LABEL_W - 6}" y="{y + 13}" text-anchor="end">{escape(label)}</text>'
            f'<rect x="{_LABEL_W}" y="{y}" width="{w:.1f}" height="{_BAR_H}" fill="{colour}">'
            f"<title>{escape(label)}: {value:g}{unit}</title></rect>"
            f'<text x="{_LABEL_W + w + 6:.1f}" y="{y + 13}">{value:g}{unit}</text>'
        )
    return (
        f'<svg class="chart" role="img" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}">{"".join(rows)}</svg>'
    )


def timeline(
    *,
    span_s: float,
    running: Sequence[int],
    failed: Sequence[int],
    waiting: Sequence[int],
    marks: Sequence[tuple[float, str, str]],
) -> str:
    """The batch over time in ``len(running)`` bins of ``span_s / bins`` seconds: attempts
    running (blue), attempts failing (red) and tasks waiting (amber) per bin, and a line
    for each circuit change ``(offset_s, colour, label)``."""
    bins = len(running)
    if not bins or span_s <= 0:
        return '<p class="none">nothing ran</p>'
    height, top_pad, plot = 220, 10, 170
    top = max(max(running, default=0), max(waiting, default=0), max(failed, default=0), 1)
    step = _WIDTH / bins
    parts = []
    for series, colour, name in (
        (running, "#3b82f6", "running"),
        (waiting, "#f59e0b", "waiting"),
        (failed, "#dc2626", "failed"),
    ):
        points = " ".join(
            f"{i * step:.1f},{top_pad + plot - plot * v / top:.1f}" for i, v in enumerate(series)
        )
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}">'
            f"<title>{name}</title></polyline>"
        )
    for offset, colour, label in marks:
        x = _WIDTH * min(max(offset / span_s, 0.0), 1.0)
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top_pad}" y2="{top_pad + plot}" '
            f'stroke="{colour}" stroke-dasharray="3,2"><title>{escape(label)}</title></line>'
        )
    axis = top_pad + plot
    parts.append(f'<line x1="0" x2="{_WIDTH}" y1="{axis}" y2="{axis}" stroke="#999"/>')
    for i in range(5):
        x = _WIDTH * i / 4
        anchor = "start" if i == 0 else "end" if i == 4 else "middle"
        parts.append(
            f'<text x="{x:.1f}" y="{axis + 16}" text-anchor="{anchor}">'
            f"{span_s * i / 4:.0f} s</text>"
        )
    parts.append(f'<text x="4" y="{top_pad + 10}">{top}</text>')
    return (
        f'<svg class="chart" role="img" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}">{"".join(parts)}</svg>'
    )
