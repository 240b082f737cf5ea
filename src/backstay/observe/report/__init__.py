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

It is made from the task store's ``ReportReads`` (``backstay.engine.report_reads``), a
page at a time, and written as it is made: the summary sections from the counts and two
passes over the attempts' light rows, the tasks section page by page, so neither the
time nor the memory it takes holds a decoded record of every task. Only the tasks it
details (an attempt failed, or the task did not succeed) are read in full. On SQLite all
of it is read in one read transaction, so the report is of one moment even while a batch
runs; on Redis the sections are read one after another (a task that moves meanwhile may
be counted in one state and listed in the next).
"""

from __future__ import annotations

import datetime as _dt
import io
import os
import shutil
import tempfile
from html import escape
from pathlib import Path
from typing import Final, TextIO

from backstay._private import open_private
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.engine.circuit_log import CircuitEntry
from backstay.engine.report_reads import ReportReads
from backstay.engine.suite_batch import read_identity
from backstay.errors import ConfigError
from backstay.observe.report import _sections as sections
from backstay.observe.report._circuits import circuits
from backstay.observe.report._tasks import PAGE_SIZE, task_rows
from backstay.observe.report._totals import UsageByModel, add_up, timeline_bins
from backstay.observe.snapshot import StateReader
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


def _write(
    out: TextIO,
    reads: ReportReads,
    entries: tuple[CircuitEntry, ...],
    *,
    base: Path,
    title: str,
    taken_at: _dt.datetime,
) -> None:
    """Write the report to ``out``. The tasks section is made first, into a temporary
    file (it adds up the usage section on the way), and copied in last."""
    usage = UsageByModel()
    with reads.report_snapshot(), tempfile.TemporaryFile("w+", encoding="utf-8") as tasks:
        tasks.writelines(task_rows(reads, base, usage))
        totals = add_up(reads.attempt_facts(size=PAGE_SIZE))
        found = timeline_bins(
            totals, reads.attempt_times(size=PAGE_SIZE), entries, taken_at=taken_at
        )
        parts = [
            ("outcome", "Outcome", sections.outcome(reads.state_counts(), totals.attempts)),
            ("failures", "Failures by kind", sections.failures(totals)),
            ("timeline", "Timeline", sections.timeline_section(found)),
            ("waits", "Retries and waiting", sections.waits(totals, entries)),
            ("circuits", "Circuits", circuits(entries)),
            ("usage", "Tokens and cost", sections.usage(usage)),
            (
                "escalations",
                "Open escalations",
                sections.escalations(reads.escalations(open_only=True)),
            ),
        ]
        made = taken_at.astimezone(_dt.UTC).isoformat(timespec="seconds")
        out.write(
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
            f"<title>{escape(redact(title))}</title><style>{_CSS}</style></head><body>"
            f'<h1>{escape(redact(title))}</h1><p class="none">as of {made}</p>'
        )
        out.writelines(
            f'<section id="{key}"><h2>{head}</h2>{html}</section>' for key, head, html in parts
        )
        out.write('<section id="tasks"><h2>Tasks</h2>')
        tasks.seek(0)
        shutil.copyfileobj(tasks, out)
        out.write(f"</section>{_TIMING}</body></html>")


def _report_reads(reader: StateReader) -> ReportReads:
    store = reader.task_store
    if not isinstance(store, ReportReads):
        raise ConfigError(f"{type(store).__name__} cannot be reported on", where="--store")
    return store


def _title(state_dir: str | os.PathLike[str], title: str | None) -> str:
    if title is not None:
        return title
    identity = read_identity(state_dir)
    if identity is None:
        return f"backstay report: {Path(state_dir)}"
    return f"backstay report: {identity.suite} ({identity.run_id})"


def render_report(
    state_dir: str | os.PathLike[str],
    *,
    base: Path,
    location: StoreLocation | None = None,
    title: str | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> str:
    """The report of the batch in ``state_dir`` (or in the shared store ``location``) as
    HTML; links to attempt logs are relative to ``base`` (the folder it is written to)."""
    out = io.StringIO()
    with StateReader(state_dir, location=location, clock=clock) as reader:
        _write(
            out,
            _report_reads(reader),
            reader.circuit_log.entries(),
            base=base,
            title=_title(state_dir, title),
            taken_at=reader.now(),
        )
    return out.getvalue()


def write_report(
    state_dir: str | os.PathLike[str],
    output: str | os.PathLike[str] | None = None,
    *,
    location: StoreLocation | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> Path:
    """Write the report of the batch in ``state_dir`` (or in the shared store ``location``)
    to ``output`` (default ``state_dir/report.html``), as it is made; its path.
    ``ConfigError`` when no batch ran there."""
    path = Path(output) if output is not None else Path(state_dir) / REPORT_FILE
    path = path.absolute()
    with StateReader(state_dir, location=location, clock=clock) as reader:
        reads = _report_reads(reader)
        entries = reader.circuit_log.entries()
        tmp = path.with_name(path.name + ".tmp")
        try:
            with os.fdopen(
                open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w", encoding="utf-8"
            ) as file:
                _write(
                    file, reads, entries, base=path.parent, title=_title(state_dir, None),
                    taken_at=reader.now(),
                )  # fmt: skip
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    tmp.replace(path)
    return path
