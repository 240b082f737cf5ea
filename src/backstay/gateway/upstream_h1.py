"""``H1Pool``: the gateway's own HTTP/1.1 upstream client, on asyncio's protocols.

One request out, its answer's head read, its body handed to the reader as it comes
(``upstream_body``): no request or response object of a library, no timer or task per
request. What it does, as aiohttp's client did it for the gateway (``Upstream`` chooses
which of the two sends a request):

* **Connections**: a pool of kept-alive connections per origin (scheme, host, port),
  unlimited, the most recently used first; ``https://`` through asyncio's TLS with the
  default verified context (``ssl_context`` replaces it). A connection is made as aiohttp
  makes one (the host resolved, then Happy Eyeballs), within ``connect_timeout_s``.
* **Reuse**: a connection goes back to the pool only once its answer has ended cleanly
  (all of a ``Content-Length`` or chunked body, nothing after it, HTTP/1.1 without
  ``Connection: close``); an answer released before its end closes its connection. An
  idle connection is closed after ``KEEPALIVE_S``.
* **A kept-alive connection the peer closed**: when a reused connection ends — closed or
  reset — before any byte of its answer came, the peer closed it while it was idle (it
  never read the request written into it), and the request is sent once more on a new
  connection. After any byte of the answer, or on a new connection, the end is a failure
  the retry driver classifies: a request is never sent again here once it may have been
  answered.
* **Timeouts**: ``read_timeout_s`` between two reads of the socket, from the request's
  write to the answer's end, not counted while the reader holds the connection paused.
* **Failures** are aiohttp's own exceptions, with aiohttp's words, so that the retry
  driver classifies each as before: ``ClientConnectorError`` (and its DNS and TLS kinds),
  ``ConnectionTimeoutError``, ``ServerDisconnectedError``, ``ClientOSError``,
  ``SocketTimeoutError``, ``ClientPayloadError`` (a body cut short or unreadable),
  ``ClientResponseError`` (a head it cannot read).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import socket
import ssl
from collections import deque
from typing import Any, Final

import aiohappyeyeballs
import aiohttp
from aiohttp import (
    ClientConnectorCertificateError,
    ClientConnectorError,
    ClientConnectorSSLError,
    ClientOSError,
    ClientPayloadError,
    ClientResponseError,
    RequestInfo,
    ServerDisconnectedError,
)
from aiohttp.client_exceptions import ConnectionTimeoutError, SocketTimeoutError
from aiohttp.http_exceptions import ContentLengthError, TransferEncodingError
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from backstay.gateway.upstream_body import Body, Chunked, Decoder, FramingError

# aiohttp >= 3.11 tells a failed name resolution apart.
_DNSError: type[ClientConnectorError] = getattr(
    aiohttp, "ClientConnectorDNSError", ClientConnectorError
)

__all__ = ["KEEPALIVE_S", "H1Answer", "H1Pool", "Origin"]

# An idle connection is closed after this long (aiohttp's connector's default).
KEEPALIVE_S: Final = 15.0
# The longest answer head read.
_MAX_HEAD_BYTES: Final = 65_536
# aiohttp's connector's Happy Eyeballs delay.
_HAPPY_EYEBALLS_S: Final = 0.25
_CLOSE_WAIT_S: Final = 1.0
_STATUS_LINE: Final = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: [^\r\n]*)?")
_TOKEN: Final = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
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


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Origin:
    """Where connections go: ``key`` names the pool (and aiohttp's ``connection_key``,
    the errors' subject); ``tls``: ``https://``."""

    name: str
    host: str
    port: int
    tls: bool
    key: Any


class _Stale(Exception):
    """A reused connection ended before any byte of its answer: sent again on a new one."""


class H1Answer:
    """An answer whose head was read; its body is ``content``. Its connection goes back to
    the pool when the body has ended cleanly; ``release`` before that closes it."""

    __slots__ = ("_connection", "content", "headers", "status")

    def __init__(
        self, status: int, headers: CIMultiDictProxy[str], content: Body, connection: _Conn
    ) -> None:
        self.status = status
        self.headers = headers
        self.content = content
        self._connection: _Conn | None = connection

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


class H1Pool:
    """Kept-alive connections per origin; ``send`` one request on one of them."""

    __slots__ = ("_all", "_connect_timeout_s", "_idle", "_read_timeout_s", "_ssl", "keepalive_s")

    def __init__(
        self,
        *,
        connect_timeout_s: float | None,
        read_timeout_s: float | None,
        ssl_context: ssl.SSLContext | None = None,
        keepalive_s: float = KEEPALIVE_S,
    ) -> None:
        self._connect_timeout_s = connect_timeout_s
        self._read_timeout_s = read_timeout_s
        self._ssl = ssl_context
        self.keepalive_s = keepalive_s
        self._idle: dict[str, deque[_Conn]] = {}
        self._all: set[_Conn] = set()

    async def send(self, origin: Origin, data: bytes, target: str, method: str) -> H1Answer:
        """Write ``data`` (a whole request) to ``origin`` and read the answer's head."""
        connection = self._kept(origin.name)
        if connection is not None:
            try:
                return await self._exchange(connection, data, target, method)
            except _Stale:
                pass  # closed by the peer while idle: once more, on a new connection
        connection = await self._connect(origin, target)
        return await self._exchange(connection, data, target, method)

    async def close(self) -> None:
        """Close every connection, idle or busy (a request still reading fails)."""
        loop = asyncio.get_running_loop()
        waits = []
        for connection in list(self._all):
            waits.append(connection.closing(loop))
            connection.abort()
        self._idle.clear()
        if waits:
            await asyncio.wait(waits, timeout=_CLOSE_WAIT_S)

    def put(self, connection: _Conn) -> None:
        """Keep ``connection``, whose answer has ended cleanly, for the next request."""
        idle = self._idle.get(connection.origin)
        if idle is None:
            idle = self._idle[connection.origin] = deque()
        now = connection.loop.time()
        connection.since = now
        idle.append(connection)
        while idle and now - idle[0].since > self.keepalive_s:
            idle.popleft().abort()

    def lost(self, connection: _Conn) -> None:
        self._all.discard(connection)
        idle = self._idle.get(connection.origin)
        if idle is not None and connection in idle:
            idle.remove(connection)

    def _kept(self, name: str) -> _Conn | None:
        idle = self._idle.get(name)
        if not idle:
            return None
        now = idle[-1].loop.time()
        while idle:
            connection = idle.pop()
            if connection.usable(now, self.keepalive_s):
                return connection
            connection.abort()
        return None

    async def _exchange(self, connection: _Conn, data: bytes, target: str, method: str) -> H1Answer:
        waiter = connection.start(data, self._read_timeout_s, target, method)
        try:
            return await waiter
        except BaseException:
            connection.abort()  # cancelled or failed: never reused
            raise

    async def _connect(self, origin: Origin, target: str) -> _Conn:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout_s):
                connection = await self._open(origin, loop)
        except TimeoutError as exc:
            raise ConnectionTimeoutError(f"Connection timeout to host {target}") from exc
        self._all.add(connection)
        return connection

    async def _open(self, origin: Origin, loop: asyncio.AbstractEventLoop) -> _Conn:
        try:
            infos = await loop.getaddrinfo(
                origin.host, origin.port, type=socket.SOCK_STREAM, flags=socket.AI_ADDRCONFIG
            )
        except OSError as exc:
            raise _DNSError(origin.key, OSError(exc.errno, exc.strerror)) from exc
        context = (self._ssl or _default_context()) if origin.tls else None
        sock: socket.socket | None = None
        try:
            sock = await aiohappyeyeballs.start_connection(
                infos, happy_eyeballs_delay=_HAPPY_EYEBALLS_S, loop=loop
            )
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _, connection = await loop.create_connection(
                lambda: _Conn(self, origin.name, loop),
                sock=sock,
                ssl=context,
                server_hostname=origin.host if context is not None else None,
            )
        except ssl.CertificateError as exc:
            _closed(sock)
            raise ClientConnectorCertificateError(origin.key, exc) from exc
        except ssl.SSLError as exc:
            _closed(sock)
            raise ClientConnectorSSLError(origin.key, exc) from exc
        except OSError as exc:
            _closed(sock)
            if exc.errno is None and isinstance(exc, TimeoutError):
                raise
            raise ClientConnectorError(origin.key, exc) from exc
        except BaseException:
            _closed(sock)
            raise
        return connection


def _closed(sock: socket.socket | None) -> None:
    if sock is not None:
        sock.close()


_CONTEXT: list[ssl.SSLContext] = []


def _default_context() -> ssl.SSLContext:
    """The verified TLS context aiohttp's client uses (made once)."""
    if not _CONTEXT:
        context = ssl.create_default_context()
        context.set_alpn_protocols(("http/1.1",))
        _CONTEXT.append(context)
    return _CONTEXT[0]


class _Conn(asyncio.Protocol):
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

    def __init__(self, pool: H1Pool, origin: str, loop: asyncio.AbstractEventLoop) -> None:
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
            waiter.set_exception(_Stale() if self.reused else ServerDisconnectedError())
            return waiter
        self._waiter = waiter
        self._state = _HEAD
        self._received = False
        self._timeout_s = timeout_s
        self._target = target
        self._method = method
        transport.write(data)
        self._last = self.loop.time()
        if timeout_s is not None:
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
                waiter.set_exception(_Stale())
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
        self._stop_timer()
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
    lines = head.split(b"\r\n")
    matched = _STATUS_LINE.fullmatch(lines[0])
    if matched is None:
        raise ValueError(f"Invalid status line: {lines[0][:80]!r}")
    headers: CIMultiDict[str] = CIMultiDict()
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or _TOKEN.fullmatch(name) is None:
            raise ValueError(f"Invalid header line: {line[:80]!r}")
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
