"""What ``backstay run`` shows while it runs: the lines ``batch`` prints for a task
(``_progress``), for its one run — each retry and each move to a fallback candidate,
naming the candidate (``adapter/model``) — on stderr, instead of the log records of
those events."""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
from collections.abc import Iterator
from typing import Final

import typer

from backstay.cli._progress_lines import fell_back_text, retry_text
from backstay.events import Event, RetryScheduled, add_sink, remove_sink
from backstay.fallback.events import FellBack

# The events this view says itself: the logging sink leaves them out.
SHOWN: Final = frozenset({"retry.attempt_failed", "retry.fell_back", "task.retrying"})
LABEL: Final = "run"


class RunLines:
    """A sink printing one line per retry or fallback move of the run; ``candidate``:
    the one its attempts run on (moved by each fallback)."""

    min_level = logging.INFO

    def __init__(self, candidate: str) -> None:
        self.candidate = candidate
        self.lines: list[str] = []

    def accepts(self, level: int) -> bool:
        return True

    def emit(self, event: Event) -> None:
        if isinstance(event, FellBack):
            text = fell_back_text(
                event.attempt, event.from_candidate, event.kind, event.to_candidate
            )
            self.candidate = event.to_candidate
        elif isinstance(event, RetryScheduled):
            text = retry_text(event, self.candidate)
        else:
            return
        now = _dt.datetime.now().astimezone()
        line = f"{now:%H:%M:%S} {LABEL}: {text}"
        self.lines.append(line)
        typer.echo(line, err=True)


@contextlib.contextmanager
def showing_run(candidate: str) -> Iterator[RunLines]:
    """Print the run's retries and fallback moves while the block runs."""
    sink = RunLines(candidate)
    add_sink(sink)
    try:
        yield sink
    finally:
        remove_sink(sink)
