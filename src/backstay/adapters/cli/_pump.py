"""Copying a child's pipes into the capture files: chunk by chunk, with a bounded tail."""

from __future__ import annotations

import asyncio
import codecs
import time
from collections.abc import Callable
from typing import Final

from backstay.adapters.capture import Capture, Stream

CHUNK_BYTES: Final = 64 * 1024
TAIL_CHARS: Final = 64 * 1024
# A stdout line longer than this reaches ``on_stdout_line`` in pieces.
MAX_LINE_CHARS: Final = 16 * 1024 * 1024

LineCallback = Callable[[str], None]


class Activity:
    """When either stream last produced output."""

    __slots__ = ("last",)

    def __init__(self, now: float) -> None:
        self.last = now

    def touch(self) -> None:
        self.last = time.monotonic()


class _Lines:
    """Splits decoded text into lines for ``on_stdout_line`` (without the newline)."""

    __slots__ = ("_callback", "_pending")

    def __init__(self, callback: LineCallback) -> None:
        self._callback = callback
        self._pending = ""

    def feed(self, text: str) -> None:
        pending = self._pending + text
        *lines, pending = pending.split("\n")
        for line in lines:
            self._callback(line)
        if len(pending) > MAX_LINE_CHARS:
            self._callback(pending)
            pending = ""
        self._pending = pending

    def close(self) -> None:
        if self._pending:
            self._callback(self._pending)
            self._pending = ""


class Pump:
    """Copies one pipe into its capture file, chunk by chunk, keeping a bounded tail."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        stream: Stream,
        capture: Capture,
        activity: Activity,
        on_line: LineCallback | None,
    ) -> None:
        self._reader = reader
        self._stream = stream
        self._capture = capture
        self._activity = activity
        self._lines = None if on_line is None else _Lines(on_line)
        self.tail = ""

    async def run(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while chunk := await self._reader.read(CHUNK_BYTES):
            self._activity.touch()
            await self._take(decoder.decode(chunk))
        await self._take(decoder.decode(b"", final=True))
        if self._lines is not None:
            self._lines.close()

    async def _take(self, text: str) -> None:
        if not text:
            return
        self.tail = (self.tail + text)[-TAIL_CHARS:]
        if self._lines is not None:
            self._lines.feed(text)
        await self._capture.awrite(self._stream, text)
