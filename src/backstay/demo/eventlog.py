"""``EventLog``: a ``backstay.observe`` sink writing every event as one JSON line, redacted."""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

from backstay.observe.events import Event
from backstay.redact import redact

__all__ = ["EventLog"]


class EventLog:
    """Appends each event of level INFO and above to ``path`` (``{"event": name, …}``),
    redacted, one line each; ``close()`` it (or use it as a context manager)."""

    min_level = logging.INFO

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file = self.path.open("a", encoding="utf-8")

    def accepts(self, level: int) -> bool:
        return True

    def emit(self, event: Event) -> None:
        line = redact(json.dumps(event.to_dict(), sort_keys=True, default=str))
        with self._lock:
            self._file.write(line + "\n")

    def close(self) -> None:
        with self._lock:
            self._file.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
