"""The HTML report of a batch: one self-contained file (inline CSS and SVG, no script
from anywhere, no font, no network) that a browser opens from disk and a colleague can
be sent.

Titled by the suite's name and run id (``batch.json``). Sections: the outcome; failures
by kind; a timeline of attempts, waits and circuit changes; retries and time spent
waiting; the circuits (each breaker's openings and why, probes, closings, the tasks'
waits, its last state); tokens and cost by provider and model; open
escalations; every task (problems first) with each failed attempt's classification
evidence (redacted) and links to its logs (relative to the report). Its size grows with
the tasks by one table row each (and the attempts of the tasks that failed); the charts
are bounded in size, so 10,000 tasks stay a few MB and render in a second or two.
"""

from __future__ import annotations

import datetime as _dt
import os
from html import escape
from pathlib import Path
from typing import Final

from backstay._private import open_private
from backstay.engine.suite_batch import read_identity
from backstay.observe.report import _sections as sections
from backstay.observe.report._circuits import circuits
from backstay.observe.snapshot import StateSnapshot, read_state
from backstay.redact import redact
from backstay.store.location import StoreLocation

__all__ = ["REPORT_FILE", "render_report", "write_report"]

REPORT_FILE: Final = "report.html"
_CSS: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#111;
padding:0 16px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 10px;text-align:left}
thead th{background:#f3f4f6}tbody tr:nth-child(even){background:#fafafa}
table.tasks{width:100%;table-layout:fixed}table.tasks th:first-child{width:45%}
.cards{display:flex;gap:10px;flex-wrap:wrap}.card{border-left:5px solid;padding:4px 12px;
background:#f9fafb}.card b{font-size:20px;margin-right:6px}
.chart text{font-size:12px;fill:#333}.none{color:#777}.legend i{display:inline-block;width:10px;
height:10px;margin:0 4px 0 10px}code{font-size:12px;white-space:pre-wrap;color:#7f1d1d}
.s-failed td:nth-child(2){color:#dc2626}.s-escalated td:nth-child(2){color:#a855f7}
.s-paused td:nth-child(2){color:#b45309}.s-succeeded td:nth-child(2){color:#16a34a}
section{content-visibility:auto;contain-intrinsic-size:auto 600px}
"""
# Records in the page when it was laid out, for the render-time check of the tests.
_TIMING: Final = (
    "<script>addEventListener('load',function(){document.body.setAttribute("
    "'data-rendered-ms',String(Math.round(performance.now())))})</script>"
)


def render_report(snap: StateSnapshot, *, base: Path, title: str | None = None) -> str:
    """The report of ``snap`` as HTML; links to attempt logs are relative to ``base``
    (the folder the file is written to)."""
    name = title or f"backstay report: {snap.state_dir}"
    parts = [
        ("outcome", "Outcome", sections.outcome(snap)),
        ("failures", "Failures by kind", sections.failures(snap)),
        ("timeline", "Timeline", sections.timeline_section(snap)),
        ("waits", "Retries and waiting", sections.waits(snap)),
        ("circuits", "Circuits", circuits(snap)),
        ("usage", "Tokens and cost", sections.usage(snap)),
        ("escalations", "Open escalations", sections.escalations(snap)),
        ("tasks", "Tasks", sections.tasks(snap, base)),
    ]
    body = "".join(
        f'<section id="{key}"><h2>{head}</h2>{html}</section>' for key, head, html in parts
    )
    made = snap.taken_at.astimezone(_dt.UTC).isoformat(timespec="seconds")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(redact(name))}</title><style>{_CSS}</style></head><body>"
        f'<h1>{escape(redact(name))}</h1><p class="none">as of {made}</p>{body}{_TIMING}'
        "</body></html>"
    )


def write_report(
    state_dir: str | os.PathLike[str],
    output: str | os.PathLike[str] | None = None,
    *,
    location: StoreLocation | None = None,
) -> Path:
    """Write the report of the batch in ``state_dir`` (or in the shared store ``location``)
    to ``output`` (default ``state_dir/report.html``); its path. ``ConfigError`` when no
    batch ran there."""
    snap = read_state(state_dir, location=location)
    path = Path(output) if output is not None else Path(state_dir) / REPORT_FILE
    path = path.absolute()
    identity = read_identity(state_dir)
    title = None if identity is None else f"backstay report: {identity.suite} ({identity.run_id})"
    html = render_report(snap, base=path.parent, title=title)
    tmp = path.with_name(path.name + ".tmp")
    with os.fdopen(
        open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w", encoding="utf-8"
    ) as file:
        file.write(html)
    tmp.replace(path)
    return path
