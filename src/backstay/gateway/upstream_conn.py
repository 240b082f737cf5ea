"""``Connection``: one upstream connection of the gateway's own client (``upstream_h1``),
an asyncio protocol: one request at a time written, its answer's head read (informational
answers skipped), its body framed (``Content-Length``, chunked, or to the connection's end)
and handed to the answer's reader (``upstream_body.Body``) as it comes.

It tells its pool (``Keeper``) when it may be used again — only after a complete answer,
on HTTP/1.1 without ``Connection: close`` (or HTTP/1.0 with ``keep-alive``), with nothing
after the answer — and when it is gone. A reused connection that ends before any byte of
its answer came fails its request with ``Stale`` (the pool sends it once more); any other
end is aiohttp's exception for it, with aiohttp's words (``ServerDisconnectedError``,
``ClientOSError``, ``ClientPayloadError``, ``SocketTimeoutError``, ``ClientResponseError``
for a head it cannot read).
"""

from __future__ import annotations

import asyncio
import re
from typing import Final, Protocol

from aiohttp import (
    ClientOSError,
    ClientPayloadError,
    ClientResponseError,
    RequestInfo,
    ServerDisconnectedError,
)
from aiohttp.client_exceptions import SocketTimeoutError
from aiohttp.http_exceptions import ContentLengthError, TransferEncodingError
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from backstay.gateway.upstream_body import Body, Chunked, Decoder, FramingError

__all__ = ["Connection", "H1Answer", "Keeper", "Stale"]

# The longest answer head read.
_MAX_HEAD_BYTES: Final = 65_536
_STATUS_LINE: Final = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: [^\r\n]*)?")
_TOKEN: Final = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# Header lines, each a token, a colon and a value without CR or LF: checked in one match.
_HEADER_LINES: Final = re.compile(rb"(?:[!#$%&'*+.^_`|~0-9A-Za-z-]+:[^\r\n]*\r\n)*")
_LENGTH: Final = re.compile(rb"[0-9]{1,18}")

# A connection's state.
_IDLE: Final = 0
_HEAD: Final = 1
_BODY: Final = 2
_CLOSED: Final = 3
# How an answer's body is framed.
_LENGTH_FRAMED: Final = 0
_CHUNKED: Final = 1
_TO_EOF: Final = 2


class Keeper(Protocol):
    """The pool a connection belongs to."""

    def put(self, connection: Connection) -> None:
        """Keep ``connection``, whose answer has ended cleanly, for the next request."""

    def lost(self, connection: Connection) -> None:
        """``connection`` is closed."""


class Stale(Exception):
    """A reused connection ended before any byte of its answer: sent again on a new one."""


class H1Answer:
    """An answer whose head was read; its body is ``content``. Its connection goes back to
    the pool when the body has ended cleanly; ``release`` before that closes it."""

    __slots__ = ("_connection", "content", "headers", "status")

    def __init__(
        self, status: int, headers: CIMultiDictProxy[str], content: Body, connection: Connection
    ) -> None:
        self.status = status
        self.headers = headers
        self.content = content
        self._connection: Connection | None = connection

    @property
    def content_type(self) -> str:
        raw = self.headers.get("Content-Type")
        if raw is None:
            return "application/octet-stream"
        return raw.split(";", 1)[0].strip().lower()

    async def read(self) -> bytes:
        try:
            return await self.content.read()
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.abandon(self.content)


class Connection(asyncio.Protocol):
    """One upstream connection: one request at a time, its answer read as it comes."""

    __slots__ = (
        "_body",
        "_chunked",
        "_closed",
        "_decoder",
        "_expected",
        "_framing",
        "_head",
        "_keep",
        "_last",
        "_left",
        "_method",
        "_paused",
        "_pool",
        "_received",
        "_state",
        "_target",
        "_timeout_s",
        "_timer",
        "_waiter",
        "loop",
        "origin",
        "reused",
        "since",
        "transport",
    )

    def __init__(self, pool: Keeper, origin: str, loop: asyncio.AbstractEventLoop) -> None:
        self._pool = pool
        self.origin = origin
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self._state = _IDLE
        self._head = b""
        self._waiter: asyncio.Future[H1Answer] | None = None
        self._body: Body | None = None
        self._framing = _LENGTH_FRAMED
        self._left = 0
        self._expected = 0
        self._chunked: Chunked | None = None
        self._decoder: Decoder | None = None
        self._keep = False
        self._received = False
        self._paused = False
        self._timeout_s: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._last = 0.0
        self._target = ""
        self._method = "POST"
        self._closed: asyncio.Future[None] | None = None
        self.reused = False
        self.since = 0.0

    # ---- the pool's side -----------------------------------------------------------------

    def usable(self, now: float, keepalive_s: float) -> bool:
        transport = self.transport
        return (
            self._state == _IDLE
            and transport is not None
            and not transport.is_closing()
            and now - self.since <= keepalive_s
        )

    def start(
        self, data: bytes, timeout_s: float | None, target: str, method: str
    ) -> asyncio.Future[H1Answer]:
        """Write a request; the future is its answer's head read."""
        waiter: asyncio.Future[H1Answer] = self.loop.create_future()
        transport = self.transport
        if transport is None or transport.is_closing() or self._state != _IDLE:
            waiter.set_exception(Stale() if self.reused else ServerDisconnectedError())
            return waiter
        self._waiter = waiter
        self._state = _HEAD
        self._received = False
        self._timeout_s = timeout_s
        self._target = target
        self._method = method
        transport.write(data)
        self._last = self.loop.time()
        # One timer a connection, moved on when it fires early (not one a request).
        if timeout_s is not None and self._timer is None:
            self._timer = self.loop.call_at(self._last + timeout_s, self._check_timeout)
        return waiter

    def abandon(self, body: Body) -> None:
        """The reader of ``body`` let go: closed unless that body has ended."""
        if self._body is body:
            self.abort()

    def abort(self) -> None:
        self._state = _CLOSED
        if self.transport is not None:
            self.transport.abort()

    def closing(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
        closed = self._closed = loop.create_future()
        if self.transport is None:
            closed.set_result(None)
        return closed

    # ---- asyncio's side ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        state = self._state
        if state == _BODY:
            self._last = self.loop.time()
            self._body_data(data)
        elif state == _HEAD:
            self._received = True
            self._last = self.loop.time()
            self._head_data(data)
        elif state == _IDLE:  # nothing was asked: the connection is not what it seems
            self.abort()

    def eof_received(self) -> bool | None:
        return None  # the transport closes itself; ``connection_lost`` follows

    def connection_lost(self, exc: BaseException | None) -> None:
        state = self._state
        self._state = _CLOSED
        self._stop_timer()
        waiter, body = self._waiter, self._body
        self._waiter = self._body = None
        self.transport = None
        if waiter is not None and not waiter.done():
            if state == _HEAD and not self._received and self.reused:
                waiter.set_exception(Stale())
            elif exc is None or not isinstance(exc, OSError):
                waiter.set_exception(ServerDisconnectedError())
            else:
                waiter.set_exception(ClientOSError(*exc.args))
        if body is not None and state != _CLOSED:
            if self._framing == _TO_EOF and exc is None:
                self._end(body)
            else:
                cut = _cut(self._framing, self._expected - self._left, self._expected, exc)
                body.set_exception(cut)
        elif body is not None:
            body.set_exception(ServerDisconnectedError())
        self._pool.lost(self)
        if self._closed is not None and not self._closed.done():
            self._closed.set_result(None)

    def pause_writing(self) -> None:  # a request larger than the socket's buffer
        pass

    def resume_writing(self) -> None:
        pass

    # ---- the answer ----------------------------------------------------------------------

    def _head_data(self, data: bytes) -> None:
        head = self._head + data if self._head else data
        end = head.find(b"\r\n\r\n")
        if end < 0:
            if len(head) > _MAX_HEAD_BYTES:
                self._fail_head(f"the answer's head is over {_MAX_HEAD_BYTES} bytes")
            else:
                self._head = head
            return
        self._head = b""
        rest = head[end + 4 :]
        try:
            version, status, headers = _parse_head(head[:end])
            if 100 <= status < 200 and status != 101:  # informational: the answer follows
                if rest:
                    self._head_data(rest)
                return
            self._frame(version, status, headers)
        except ValueError as exc:
            self._fail_head(str(exc))
            return
        body = self._body = Body(self._pause, self._resume)
        answer = H1Answer(status, CIMultiDictProxy(headers), body, self)
        self._state = _BODY
        if self._framing == _LENGTH_FRAMED and self._left == 0:
            self._end(body, rest)
        elif rest:
            self._body_data(rest)
        # Handed over once what came with the head was read: a body unreadable from its
        # first bytes fails the head (``_body_data``), as aiohttp's parser fails it.
        waiter = self._waiter
        self._waiter = None
        if waiter is not None and not waiter.done():
            waiter.set_result(answer)

    def _frame(self, version: bytes, status: int, headers: CIMultiDict[str]) -> None:
        connection = headers.get("Connection", "").lower()
        self._keep = "close" not in connection if version == b"1" else "keep-alive" in connection
        self._chunked = self._decoder = None
        encoding = headers.get("Content-Encoding")
        if Decoder.wanted(encoding):
            self._decoder = Decoder((encoding or "").strip().lower())
        coding = headers.get("Transfer-Encoding")
        if status in {101, 204, 304}:
            self._framing, self._left = _LENGTH_FRAMED, 0
            self._keep = self._keep and status != 101
        elif coding is not None:
            if coding.rsplit(",", 1)[-1].strip().lower() == "chunked":
                self._framing, self._chunked = _CHUNKED, Chunked()
                self._keep = self._keep and "Content-Length" not in headers
            else:
                self._framing, self._keep = _TO_EOF, False
        elif "Content-Length" in headers:
            self._framing, self._left = _LENGTH_FRAMED, _content_length(headers)
            self._expected = self._left
        else:
            self._framing, self._keep = _TO_EOF, False

    def _body_data(self, data: bytes) -> None:
        body = self._body
        if body is None:
            return
        try:
            framing = self._framing
            if framing == _LENGTH_FRAMED:
                left = self._left
                if len(data) < left:
                    self._left = left - len(data)
                    self._feed(body, data)
                    return
                self._left = 0
                self._feed(body, data[:left] if len(data) > left else data)
                self._end(body, data[left:])
            elif framing == _CHUNKED and self._chunked is not None:
                pieces, ended = self._chunked.feed(data)
                for piece in pieces:
                    self._feed(body, piece)
                if ended:
                    self._end(body, self._chunked.rest)
            else:
                self._feed(body, data)
        except FramingError as exc:
            self._body = None
            if self._waiter is not None:
                self._fail_head(str(exc))
                return
            body.set_exception(ClientPayloadError(f"Response payload is not completed: {exc}"))
            self.abort()

    def _feed(self, body: Body, data: bytes) -> None:
        decoder = self._decoder
        body.feed(decoder.decode(data) if decoder is not None else data)

    def _end(self, body: Body, rest: bytes = b"") -> None:
        """The body ended cleanly: the connection is kept unless anything is wrong."""
        if self._decoder is not None:
            try:
                body.feed(self._decoder.flush())
            except FramingError as exc:
                body.set_exception(ClientPayloadError(f"Response payload is not completed: {exc}"))
                self.abort()
                return
        self._body = None
        if self._paused:
            self._paused = False
            if self.transport is not None:
                self.transport.resume_reading()
        body.feed_eof()
        if self._state == _CLOSED:
            return
        self._state = _IDLE
        if rest or not self._keep or self.transport is None:
            self.abort()
            return
        self.reused = True
        self._pool.put(self)

    def _fail_head(self, message: str) -> None:
        waiter = self._waiter
        self._waiter = None
        if waiter is not None and not waiter.done():
            url = URL(self._target)
            info = RequestInfo(url, self._method, CIMultiDictProxy(CIMultiDict()), url)
            waiter.set_exception(ClientResponseError(info, (), status=400, message=message))
        self.abort()

    # ---- flow control and the read timeout -------------------------------------------------

    def _pause(self) -> None:
        if self.transport is not None and not self._paused:
            self._paused = True
            self.transport.pause_reading()

    def _resume(self) -> None:
        if self.transport is not None and self._paused:
            self._paused = False
            self.transport.resume_reading()
            self._last = self.loop.time()
            if self._timer is None and self._timeout_s is not None:
                self._timer = self.loop.call_at(self._last + self._timeout_s, self._check_timeout)

    def _check_timeout(self) -> None:
        self._timer = None
        timeout_s = self._timeout_s
        if self._state not in {_HEAD, _BODY} or self._paused or timeout_s is None:
            return
        due = self._last + timeout_s
        if self.loop.time() < due:
            self._timer = self.loop.call_at(due, self._check_timeout)
            return
        exc = SocketTimeoutError("Timeout on reading data from socket")
        waiter, body = self._waiter, self._body
        self._waiter = self._body = None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        if body is not None:
            body.set_exception(exc)
        self.abort()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _cut(
    framing: int, received: int, expected: int, exc: BaseException | None
) -> ClientPayloadError:
    """What a body cut short raises, in aiohttp's words (``received`` of ``expected``
    bytes of a ``Content-Length``)."""
    underlying: Exception
    if framing == _CHUNKED:
        underlying = TransferEncodingError("Not enough data to satisfy transfer length header.")
    else:
        underlying = ContentLengthError(
            "Not enough data to satisfy content length header "
            f"(received {received} of {expected} bytes)."
        )
    message = f"Response payload is not completed: {underlying!r}"
    if exc is not None:
        message = f"{message}. {exc!r}"
    error = ClientPayloadError(message)
    error.__cause__ = underlying
    return error


def _parse_head(head: bytes) -> tuple[bytes, int, CIMultiDict[str]]:
    """The version digit after ``1.``, the status and the headers of an answer's head."""
    status_line, _, rest = head.partition(b"\r\n")
    matched = _STATUS_LINE.fullmatch(status_line)
    if matched is None:
        raise ValueError(f"Invalid status line: {status_line[:80]!r}")
    lines = rest.split(b"\r\n") if rest else []
    if rest and _HEADER_LINES.fullmatch(rest + b"\r\n") is None:
        for line in lines:  # which one
            name, colon, _ = line.partition(b":")
            if not colon or _TOKEN.fullmatch(name) is None:
                raise ValueError(f"Invalid header line: {line[:80]!r}")
        raise ValueError("Invalid header lines")
    headers: CIMultiDict[str] = CIMultiDict()
    for line in lines:
        name, _, value = line.partition(b":")
        headers.add(name.decode("ascii"), value.strip(b" \t").decode("utf-8", "surrogateescape"))
    return matched[1], int(matched[2]), headers


def _content_length(headers: CIMultiDict[str]) -> int:
    values = set(headers.getall("Content-Length"))
    if len(values) != 1:
        raise ValueError("Conflicting Content-Length headers")
    value = values.pop().strip()
    if _LENGTH.fullmatch(value.encode("ascii", "replace")) is None:
        raise ValueError(f"Invalid Content-Length: {value[:40]!r}")
    return int(value)
