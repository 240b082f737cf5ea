"""What the fake provider counts (``Stats``, a snapshot) and the request log it writes.

The log is JSON Lines, one object per request, buffered and written in batches so that
logging costs the hot path one list append. No header or body is logged.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, TextIO

__all__ = ["Stats"]

_FLUSH_LINES: Final = 512


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Stats:
    """Counters since the server started. ``requests`` counts every request answered
    (``GET`` ones included, the stats endpoint excluded); ``by_fault`` counts injected
    faults by name and enforced rate limits as ``rate_limit_enforced``; ``replays`` counts
    answers repeated for an ``Idempotency-Key``; tokens count work done (not replays);
    ``by_turn`` counts the requests of a scripted session by their turn, answered or
    failed."""

    requests: int = 0
    by_status: Mapping[int, int] = dataclasses.field(default_factory=dict)
    by_fault: Mapping[str, int] = dataclasses.field(default_factory=dict)
    by_api: Mapping[str, int] = dataclasses.field(default_factory=dict)
    by_turn: Mapping[int, int] = dataclasses.field(default_factory=dict)
    replays: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (status codes and turns as text keys)."""
        return {
            "requests": self.requests,
            "by_status": {str(k): v for k, v in sorted(self.by_status.items())},
            "by_fault": dict(sorted(self.by_fault.items())),
            "by_api": dict(sorted(self.by_api.items())),
            "by_turn": {str(k): v for k, v in sorted(self.by_turn.items())},
            "replays": self.replays,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One request as the log and the counters see it."""

    time: float
    path: str
    api: str | None
    model: str | None
    stream: bool
    idempotency_key: str | None
    fault: str | None
    status: int
    input_tokens: int = 0
    output_tokens: int = 0
    replay: bool = False
    traceparent: str | None = None
    turn: int | None = None


_FIELDS: Final = tuple(field.name for field in dataclasses.fields(Entry))


class Recorder:
    """Counters and the optional log. ``record`` runs on the server's loop; ``snapshot``
    may run on any thread."""

    def __init__(self, log_path: Path | None) -> None:
        self._lock = threading.Lock()
        self._requests = 0
        self._status: Counter[int] = Counter()
        self._fault: Counter[str] = Counter()
        self._api: Counter[str] = Counter()
        self._turn: Counter[int] = Counter()
        self._replays = 0
        self._input = 0
        self._output = 0
        self._pending: list[str] = []
        self._log: TextIO | None = None
        if log_path is not None:
            self._log = log_path.open("a", encoding="utf-8")

    def record(self, entry: Entry) -> None:
        with self._lock:
            self._requests += 1
            self._status[entry.status] += 1
            if entry.fault is not None:
                self._fault[entry.fault] += 1
            if entry.api is not None:
                self._api[entry.api] += 1
            if entry.turn is not None:
                self._turn[entry.turn] += 1
            self._replays += entry.replay
            self._input += entry.input_tokens
            self._output += entry.output_tokens
        if self._log is not None:
            line = {name: getattr(entry, name) for name in _FIELDS}
            self._pending.append(json.dumps(line, ensure_ascii=False))
            if len(self._pending) >= _FLUSH_LINES:
                self.flush()

    def flush(self) -> None:
        """Write what is buffered (the server calls this periodically and on stop)."""
        if self._log is None or not self._pending:
            return
        lines, self._pending = self._pending, []
        self._log.write("\n".join(lines) + "\n")
        self._log.flush()

    def close(self) -> None:
        self.flush()
        if self._log is not None:
            self._log.close()
            self._log = None

    def snapshot(self) -> Stats:
        with self._lock:
            return Stats(
                requests=self._requests,
                by_status=MappingProxyType(dict(self._status)),
                by_fault=MappingProxyType(dict(self._fault)),
                by_api=MappingProxyType(dict(self._api)),
                by_turn=MappingProxyType(dict(self._turn)),
                replays=self._replays,
                input_tokens=self._input,
                output_tokens=self._output,
            )
