"""The report's tasks section: every task, problems first, a page at a time.

Each task is one row of its ``TaskLine`` (ids, state, requested and answering model,
attempts, tokens, a link to its last attempt's logs). Only a task that failed an attempt
or did not succeed gets its attempts read in full, for the row that shows each one with
its classification evidence (redacted) and a link to its logs. The models a fallback
chain may answer with are worked out once per distinct chain, not per task.
"""

from __future__ import annotations

import functools
import json
import os
from collections import defaultdict
from collections.abc import Iterator, Sequence
from html import escape
from pathlib import Path
from typing import Final

from backstay.engine.records import AttemptRecord
from backstay.engine.report_reads import ReportReads, TaskLine
from backstay.engine.states import TaskState
from backstay.engine.task_index import TaskFilter
from backstay.failure import Failure
from backstay.fallback.candidate import Candidate
from backstay.observe.report._sections import EVIDENCE_CHARS, STATE_COLOURS
from backstay.observe.report._totals import UsageByModel
from backstay.redact import redact

__all__ = ["ORDER", "PAGE_SIZE", "models", "task_rows"]

PAGE_SIZE: Final = 1000
# Problems first, so a reader of a large batch finds them at the top.
ORDER: Final = tuple(reversed(list(STATE_COLOURS)))
_HEAD: Final = (
    "<tr><th>task</th><th>state</th><th>requested model</th><th>answering model</th>"
    "<th>attempts</th><th>tokens</th><th>last attempt</th></tr>"
)


@functools.lru_cache(maxsize=256)
def _chain(adapter: str, model: str, fallbacks: str | None) -> dict[str, str]:
    """Candidate name → model, over a task's own model and then its fallbacks (the first
    candidate of a name wins, as in the chain)."""
    names = {f"{adapter}/{model}": model}
    for data in json.loads(fallbacks) if fallbacks else ():
        candidate = Candidate.from_dict(data, where="fallbacks")
        names.setdefault(candidate.name, candidate.model)
    return names


def models(line: TaskLine) -> tuple[str, str]:
    """The model ``line``'s task asked for and the one that answered: a success's stored
    result names it; otherwise the fallback candidate of its last attempt (the task's own
    model when it has none)."""
    requested = str(line.requested_model or line.model)
    if line.answered_model:
        return requested, str(line.answered_model)
    last = line.last_candidate
    if last is not None:
        found = _chain(line.adapter, line.model, line.fallbacks).get(last)
        if found is not None:
            return requested, found
    return requested, line.model


class _Links:
    """Links to log folders, relative to ``base`` (``os.path.relpath``, its work done once
    per parent folder: a batch's folders share a few parents)."""

    def __init__(self, base: Path) -> None:
        self._base = base
        self._parent = functools.lru_cache(maxsize=4096)(self._relpath)
        self.relative = functools.lru_cache(maxsize=4096)(self._relative)  # type: ignore[method-assign]

    def _relpath(self, path: str) -> str:
        try:
            return os.path.relpath(path, self._base)
        except ValueError:
            return path

    def relative(self, path: str) -> str:
        return self._relative(path)

    def _relative(self, path: str) -> str:
        head, leaf = os.path.split(path)
        if leaf not in ("", ".", ".."):
            parent = self._parent(head or os.curdir)
            if parent == os.curdir:
                return leaf
            # Unless the parent is base or one of its ancestors (only ".." parts), the leaf
            # cannot join the part the two paths share: it is added to the parent's path.
            if any(part != os.pardir for part in parent.split(os.sep)):
                return os.path.join(parent, leaf)
        return self._relpath(path)

    def link(self, path: str) -> str:
        return f'<a href="{escape(self.relative(path))}/">logs</a>'


def _evidence(failure: Failure) -> str:
    details = json.dumps(dict(failure.details), default=str, sort_keys=True)
    status = "" if failure.status is None else f" HTTP {failure.status}"
    text = f"{failure.kind}/{failure.code}{status}: {failure.message} {details}"
    return escape(redact(text)[:EVIDENCE_CHARS])


def _attempt_item(a: AttemptRecord, links: _Links) -> str:
    text = f"attempt {a.number} {a.outcome}"
    if a.ended_at is not None:
        text += f" after {(a.ended_at - a.started_at).total_seconds():.1f} s"
    if a.delay_s is not None:
        text += f", retry in {a.delay_s:.2f} s"
    evidence = "" if a.failure is None else f"<br><code>{_evidence(a.failure)}</code>"
    return f"<li>{text} {links.link(a.output_dir)}{evidence}</li>"


def _detailed(line: TaskLine) -> bool:
    return line.failed_attempts > 0 or line.state is not TaskState.SUCCEEDED


@functools.lru_cache(maxsize=1024)
def _model_cells(requested: str, answering: str) -> str:
    """The two model cells (a batch has few distinct pairs)."""
    moved = "" if answering == requested else ' class="fell-back"'
    return f"<td>{escape(requested)}</td><td{moved}>{escape(answering)}</td>"


def _rows(line: TaskLine, attempts: Sequence[AttemptRecord], links: _Links) -> str:
    label = f"{line.task_id}/{line.task_run_id}"
    folder = line.last_output_dir
    last = "" if not line.attempts or folder is None else links.link(folder)
    row = (
        f'<tr class="s-{line.state}"><td>{escape(label)}</td><td>{line.state}</td>'
        f"{_model_cells(*models(line))}<td>{line.attempts}</td><td>{line.tokens}</td>"
        f"<td>{last}</td></tr>"
    )
    if not _detailed(line):
        return row
    items = "".join(_attempt_item(a, links) for a in attempts)
    return (
        f'{row}<tr class="more"><td colspan="7"><details><summary>{escape(redact(line.reason))}'
        f"</summary><ol>{items}</ol></details></td></tr>"
    )


def task_rows(
    reads: ReportReads, base: Path, usage: UsageByModel, *, size: int = PAGE_SIZE
) -> Iterator[str]:
    """The section's HTML in pieces: every task, problems first (``ORDER``), each state's
    tasks in registration order; links relative to ``base``. Each task's tokens and cost
    are added to ``usage`` on the way."""
    links = _Links(base)
    yield f'<table class="tasks"><thead>{_HEAD}</thead><tbody>'
    for state in ORDER:
        for page in reads.report_lines(TaskFilter(states=frozenset({state})), size=size):
            by_task: defaultdict[str, list[AttemptRecord]] = defaultdict(list)
            wanted = [line.operation_id for line in page if _detailed(line)]
            for attempt in reads.attempts_of(wanted) if wanted else ():
                by_task[attempt.operation_id].append(attempt)
            for line in page:
                usage.add(line)
            yield "".join(_rows(line, by_task.get(line.operation_id, ()), links) for line in page)
    yield "</tbody></table>"
