"""``EventLog``: a sink writing every event as one JSON line, redacted; and how a batch
keeps one in its state directory (``events.jsonl``).

Each line is the event's ``to_dict()`` with ``at``, the wall-clock time it was written
(ISO-8601, UTC), added first. ``recording(path, operations)`` installs an ``EventLog`` on
the event bus for the duration of a block, keeping only the events of the given
operations (the bus is process-wide: another engine's tasks stay out of this file).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Final

from backstay._private import open_private
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.events.bus import BUS
from backstay.events.event import Event
from backstay.redact import redact_once, redact_personal_mapping

__all__ = ["EVENTS_FILE", "EventLog", "recording"]

# The event log of a state directory.
EVENTS_FILE: Final = "events.jsonl"

# ``json.dumps(data, default=str)``, whose keyword makes a new encoder at each call: one
# encoder, made once, writes the same text (it keeps no state between calls).
_ENCODE: Final = json.JSONEncoder(default=str).encode


class EventLog:
    """Appends each event of level INFO and above to ``path`` (``{"at": …, "event": name,
    …}``), redacted, one line each, flushed as it is written; ``close()`` it (or use it as
    a context manager). ``operations``: keep only the events of these operation ids."""

    min_level = logging.INFO

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        operations: Collection[str] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.path = Path(path)
        self._operations = None if operations is None else frozenset(operations)
        self._clock = clock
        self._lock = threading.Lock()
        fd = open_private(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self._file = os.fdopen(fd, "a", encoding="utf-8")

    def accepts(self, level: int) -> bool:
        return True

    def emit(self, event: Event) -> None:
        if self._operations is not None and event.operation not in self._operations:
            return
        # Strings redacted as values (numbers stay numbers), then the line as before; ``at``,
        # made here, is no text of anyone's (redacting a fresh time each line cost more than
        # the rest of the event). ``redact_once`` gives what ``redact`` gives: a line is
        # never seen twice, so it stays out of the cache of repeated texts.
        data = {"at": self._clock.now().isoformat(), **redact_personal_mapping(event.to_dict())}
        line = redact_once(_ENCODE(data))
        with self._lock:
            if not self._file.closed:
                self._file.write(line + "\n")
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def recording(
    path: str | os.PathLike[str], operations: Collection[str], *, clock: Clock = SYSTEM_CLOCK
) -> Iterator[EventLog]:
    """An ``EventLog`` on ``path`` receiving the events of ``operations`` from the event
    bus while the block runs."""
    log = EventLog(path, operations=operations, clock=clock)
    BUS.add(log)
    try:
        yield log
    finally:
        BUS.remove(log)
        log.close()
