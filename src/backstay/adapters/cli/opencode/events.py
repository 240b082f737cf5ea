"""Reading ``opencode run --format json --print-logs``: stdout events and stderr log lines.

stdout: ``step_start``; ``text`` (``part.text``); ``tool_use`` (``part.tool``,
``part.state.status``); ``step_finish`` with ``part.tokens{input, output, reasoning,
cache{read, write}}`` and ``part.cost`` — one per model call; ``error`` with
``error{name, data{message, statusCode, isRetryable, responseHeaders, responseBody}}``.

stderr (``--print-logs``): ``key=value`` log lines. A failed model call logs
``message="stream error" … small=false … error.error="<text>"``; opencode then retries
by itself (429, 5xx, connection errors: up to 6 attempts, no setting turns this off) or
reports the error and stops. ``ErrorWatch`` turns that line into the adapter's cue to
stop the run after a short grace, so that backstay's policy makes the retry decision.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from backstay.adapters.usage import Usage

_SHOWN_CHARS: Final = 500
_STREAM_ERROR: Final = re.compile(r'message="stream error".*\bsmall=false\b')
_ERROR_TEXT: Final = re.compile(r'\berror\.error="((?:[^"\\]|\\.)*)"')


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _short(text: object) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= _SHOWN_CHARS else line[:_SHOWN_CHARS] + " …"


def step_usage(part: Mapping[str, Any]) -> Usage:
    """One ``step_finish`` part as ``Usage`` (one model call; opencode's own cost)."""
    raw = part.get("tokens")
    tokens: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    raw_cache = tokens.get("cache")
    cache: Mapping[str, Any] = raw_cache if isinstance(raw_cache, Mapping) else {}
    cost = part.get("cost")
    usd = (
        float(cost)
        if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost)
        else None
    )
    return Usage(
        input_tokens=_count(tokens.get("input")),
        output_tokens=_count(tokens.get("output")) + _count(tokens.get("reasoning")),
        cache_read_tokens=_count(cache.get("read")),
        cache_write_tokens=_count(cache.get("write")),
        cost_usd=usd if usd is not None and usd >= 0 else None,
        api_calls=1,
    )


class EventReader:
    """Fed stdout line by line: logs each event readably through ``log``, keeps the answer
    (the last text), the usage of every step, and whether an ``error`` event came; calls
    ``on_error`` when one does."""

    __slots__ = ("_log", "_on_error", "answer", "errors", "usage")

    def __init__(self, log: Callable[[str], None], on_error: Callable[[], None]) -> None:
        self._log = log
        self._on_error = on_error
        self.answer = ""
        self.usage = Usage()
        self.errors = 0

    def line(self, text: str) -> None:
        text = text.strip()
        if not text.startswith("{"):
            return
        try:
            event = json.loads(text)
        except ValueError:
            return
        if isinstance(event, dict):
            self._event(event)

    def _event(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        raw = event.get("part")
        part: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        if kind == "text" and isinstance(part.get("text"), str):
            self.answer = part["text"]
            self._log(f"opencode message: {_short(part['text'])}")
        elif kind == "tool_use":
            state = part.get("state")
            status = state.get("status") if isinstance(state, Mapping) else None
            self._log(f"opencode tool {part.get('tool', '?')}: {status}")
        elif kind == "step_finish":
            step = step_usage(part)
            self.usage = self.usage + step
            self._log(
                f"opencode step finished ({part.get('reason', '?')}): "
                f"{step.prompt_tokens} prompt tokens, {step.output_tokens} output tokens"
            )
        elif kind == "error":
            self.errors += 1
            error = event.get("error")
            name = error.get("name") if isinstance(error, Mapping) else None
            self._log(f"opencode error event: {name}")
            self._on_error()


def logged_error(line: str) -> str | None:
    """The error text of a failed main model call in an opencode log line, else ``None``."""
    if not _STREAM_ERROR.search(line):
        return None
    found = _ERROR_TEXT.search(line)
    if found is None:
        return "stream error"
    return found.group(1).replace('\\"', '"').replace("\\\\", "\\")


class ErrorWatch:
    """Fed stderr line by line: on a failed main model call, remembers its text and sets
    ``stop`` after ``grace_s`` (at once when ``now`` is called, for an ``error`` event)."""

    __slots__ = ("_grace_s", "_log", "_timer", "error", "stop")

    def __init__(self, grace_s: float, log: Callable[[str], None]) -> None:
        self._grace_s = grace_s
        self._log = log
        self._timer: asyncio.TimerHandle | None = None
        self.error: str | None = None
        self.stop = asyncio.Event()

    def line(self, text: str) -> None:
        found = logged_error(text)
        if found is None or self.error is not None:
            return
        self.error = found
        self._log(
            f"opencode model call failed: {_short(found)}; stopping it in {self._grace_s:g} s"
        )
        self._timer = asyncio.get_running_loop().call_later(self._grace_s, self.stop.set)

    def now(self) -> None:
        """Stop at once (opencode has reported the error itself)."""
        self.stop.set()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
