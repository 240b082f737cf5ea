"""An upstream answer's body as the gateway's own client (``upstream_h1``) reads it: the
framing taken off (``Content-Length``, chunked, or up to the connection's end), a
``gzip`` / ``deflate`` encoding decoded (as aiohttp's ``auto_decompress`` does), and the
bytes handed to the reader (``Body``) with flow control.

``Body`` is what an attempt and the relay read (``readany``, ``iter_any``, ``read``, as on
aiohttp's ``StreamReader``): bytes already received are handed out before a failure is
raised; past ``HIGH_WATER`` bytes waiting to be read, the connection stops reading from its
socket (``pause``) until the reader has taken them down to ``LOW_WATER`` (``resume``).
"""

from __future__ import annotations

import asyncio
import zlib
from collections import deque
from collections.abc import Callable
from typing import Final

__all__ = ["HIGH_WATER", "LOW_WATER", "Body", "Chunked", "Decoder", "FramingError"]

# aiohttp's StreamReader pauses its connection past twice its 64 KiB limit, resumes below it.
HIGH_WATER: Final = 131_072
LOW_WATER: Final = 65_536
# The longest chunk-size line (with extensions) read.
_MAX_SIZE_LINE: Final = 4096
_DECODED: Final = frozenset({"gzip", "deflate", "x-gzip"})


class FramingError(Exception):
    """A body whose framing cannot be read (a chunk size that is not hex, a chunk without
    its CRLF)."""


class Body:
    """The bytes of one answer's body, as they come; ``pause`` / ``resume``: the
    connection's reading, stopped while too much waits here."""

    __slots__ = ("_chunks", "_eof", "_exc", "_pause", "_paused", "_resume", "_size", "_waiter")

    def __init__(self, pause: Callable[[], None], resume: Callable[[], None]) -> None:
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._eof = False
        self._exc: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._pause: Callable[[], None] | None = pause
        self._resume: Callable[[], None] | None = resume
        self._paused = False

    @property
    def at_eof(self) -> bool:
        """Whether the body ended (cleanly or not) and every byte of it was read."""
        return (self._eof or self._exc is not None) and not self._chunks

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self._chunks.append(data)
        self._size += len(data)
        self._wake()
        if self._size > HIGH_WATER and not self._paused and self._pause is not None:
            self._paused = True
            self._pause()

    def feed_eof(self) -> None:
        """The body ended; the connection is no longer this body's."""
        self._eof = True
        self._detach()
        self._wake()

    def set_exception(self, exc: BaseException) -> None:
        """The body failed: ``exc`` is raised once the bytes before it have been read."""
        if self._eof or self._exc is not None:
            return
        self._exc = exc
        self._detach()
        self._wake()

    async def readany(self) -> bytes:
        """The bytes received so far and not yet read (waiting for some); ``b""`` at the
        end."""
        while not self._chunks:
            if self._exc is not None:
                raise self._exc
            if self._eof:
                return b""
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        data = self._chunks.popleft() if len(self._chunks) == 1 else b"".join(self._chunks)
        self._chunks.clear()
        self._size = 0
        if self._paused:
            self._paused = False
            if self._resume is not None:
                self._resume()
        return data

    def iter_any(self) -> _Pieces:
        """``async for`` over the body's bytes as they come."""
        return _Pieces(self)

    async def read(self) -> bytes:
        """The whole body."""
        parts = []
        while data := await self.readany():
            parts.append(data)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _detach(self) -> None:
        self._pause = self._resume = None
        self._paused = False

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class _Pieces:
    __slots__ = ("_body",)

    def __init__(self, body: Body) -> None:
        self._body = body

    def __aiter__(self) -> _Pieces:
        return self

    async def __anext__(self) -> bytes:
        data = await self._body.readany()
        if not data:
            raise StopAsyncIteration
        return data


class Chunked:
    """A chunked body's framing taken off, whatever the pieces it arrives in: ``feed``
    returns the data and whether the body ended (its last chunk and trailers read), and
    what came after its end (``rest``)."""

    __slots__ = ("_buffer", "_left", "_state", "rest")

    def __init__(self) -> None:
        self._buffer = b""
        self._left = 0
        self._state = 0  # 0 size line, 1 data, 2 the CRLF after data, 3 trailers
        self.rest = b""

    def feed(self, data: bytes) -> tuple[list[bytes], bool]:
        out: list[bytes] = []
        buffer = self._buffer + data if self._buffer else data
        self._buffer = b""
        at = 0
        while True:
            state = self._state
            if state == 1:
                take = min(self._left, len(buffer) - at)
                if take:
                    out.append(buffer[at : at + take])
                    at += take
                    self._left -= take
                if self._left:
                    return out, False
                self._state = 2
            elif state == 2:
                if len(buffer) - at < 2:
                    self._buffer = buffer[at:]
                    return out, False
                if buffer[at : at + 2] != b"\r\n":
                    raise FramingError("a chunk does not end with CRLF")
                at += 2
                self._state = 0
            else:
                end = buffer.find(b"\r\n", at)
                if end < 0:
                    if len(buffer) - at > _MAX_SIZE_LINE:
                        raise FramingError("a chunk-size line is too long")
                    self._buffer = buffer[at:]
                    return out, False
                line = buffer[at:end]
                at = end + 2
                if state == 3:  # a trailer line; an empty one ends the body
                    if not line:
                        self.rest = buffer[at:]
                        return out, True
                    continue
                size = _chunk_size(line)
                if size == 0:
                    self._state = 3
                else:
                    self._left, self._state = size, 1


def _chunk_size(line: bytes) -> int:
    digits = line.split(b";", 1)[0].strip(b" \t")
    if not digits or len(digits) > 16 or digits.strip(b"0123456789abcdefABCDEF"):
        raise FramingError(f"a chunk size is not hexadecimal: {line[:40]!r}")
    return int(digits, 16)


class Decoder:
    """A ``gzip`` or ``deflate`` body decoded as it comes (``deflate`` with or without its
    zlib header, as aiohttp reads it)."""

    __slots__ = ("_encoding", "_inflate")

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        self._inflate: zlib._Decompress | None = None
        if encoding != "deflate":
            self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)

    @staticmethod
    def wanted(encoding: str | None) -> bool:
        """Whether an answer of ``encoding`` (its ``Content-Encoding``) is decoded."""
        return encoding is not None and encoding.strip().lower() in _DECODED

    def decode(self, data: bytes) -> bytes:
        inflate = self._inflate
        if inflate is None:
            if not data:
                return b""
            wbits = zlib.MAX_WBITS if data[0] & 0x0F == 8 else -zlib.MAX_WBITS
            inflate = self._inflate = zlib.decompressobj(wbits)
        try:
            return inflate.decompress(data)
        except zlib.error as exc:
            raise FramingError(f"cannot decode content-encoding: {self._encoding}") from exc

    def flush(self) -> bytes:
        inflate = self._inflate
        if inflate is None:
            return b""
        try:
            return inflate.flush()
        except zlib.error as exc:
            raise FramingError(f"cannot decode content-encoding: {self._encoding}") from exc
