"""``Http1``: the gateway's own HTTP/1.1 server protocol, for the requests it forwards.

aiohttp's web server builds a request object, resolves its router, runs its handler as
a task of its own and serialises a response object for every request: next to a gateway
that forwards one short JSON request and answer, that is a third of its added latency
(docs/benchmarks.md, "Gateway"). This protocol reads a request's bytes itself and hands
the proxy a ``ClientRequest``; a ``Reply`` goes back in one write, a ``StreamReply`` as
chunks, as they come.

It serves GET and POST requests of HTTP/1.1 in origin form (``/path?query``) whose body
is framed by ``Content-Length``. A connection with anything else — the run-admin routes
(``/_backstay/…``), another method, a chunked body, ``Expect``, ``Upgrade``, HTTP/1.0, a
target in absolute form — is handed, with the bytes it has read, to aiohttp's server
(``handoff``), which serves it from then on: one server's rules for what this one does
not read itself. What it reads strictly: a request line and headers of visible ASCII
(and ``obs-text``) ending in CRLF, a header name a token, one ``Content-Length`` of
digits; else a 400 and the connection closed. A head over 64 KiB is a 431, a body over
the gateway's ``max_request_bytes`` a 413, each closing the connection unread.

Requests on one connection are answered in turn (a pipelined request waits in the
buffer, and reading pauses while the buffer is full). A client that disconnects cancels
its request's task, as aiohttp's handler cancellation does. An idle connection is closed
after ``KEEPALIVE_S``.
"""

from __future__ import annotations

import asyncio
import email.utils
import http
import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

from backstay.gateway.exchange import ClientRequest, Reply, StreamReply, relay

if TYPE_CHECKING:
    from multidict import CIMultiDict

__all__ = ["KEEPALIVE_S", "LINGER_S", "MAX_HEAD_BYTES", "Http1", "Http1Connections"]

# An idle kept-alive connection is closed after this long (aiohttp's default).
KEEPALIVE_S: Final = 75.0
# How long a refused connection is read (and dropped) before it is closed.
LINGER_S: Final = 2.0
# The longest request line and headers read.
MAX_HEAD_BYTES: Final = 65_536
_SERVED_METHODS: Final = frozenset({"GET", "POST"})
# The run-admin routes' prefix (``run_admin``): aiohttp's router serves them.
_ADMIN: Final = b"/_backstay/"
# What only aiohttp's server reads: the connection is handed over.
_HANDED_HEADERS: Final = frozenset({"transfer-encoding", "expect", "upgrade"})
_REQUEST_LINE: Final = re.compile(
    rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+) ([\x21-\x7e\x80-\xff]+) HTTP/([0-9]\.[0-9])"
)
_HEADER_LINE: Final = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):([\t\x20-\x7e\x80-\xff]*)")
_DIGITS: Final = re.compile(rb"[0-9]{1,18}")

Handler = Callable[[ClientRequest], Awaitable["Reply | StreamReply"]]
Handoff = Callable[[asyncio.Transport, bytes], None]


class _Refused(Exception):
    """A request this server answers with ``status`` and closes the connection."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Http1Connections:
    """The connections of one server: closed when it stops."""

    def __init__(self) -> None:
        self.open: set[Http1] = set()

    async def close(self, grace_s: float) -> None:
        """Close idle connections at once; give requests being answered ``grace_s``,
        then cancel them (and wait as long again for them to end)."""
        for connection in list(self.open):
            if not connection.busy:
                connection.close()
        tasks = [c.task for c in self.open if c.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=grace_s)
        for connection in list(self.open):
            connection.abort()
        cancelled = [task for task in tasks if not task.done()]
        if cancelled:
            await asyncio.wait(cancelled, timeout=grace_s)


class Http1(asyncio.Protocol):
    """One client connection: requests answered by ``handler``; what it does not read
    itself goes to ``handoff`` (the transport and the bytes read so far)."""

    __slots__ = (
        "_buffer",
        "_close_after",
        "_connections",
        "_discarding",
        "_handler",
        "_handoff",
        "_head_sent",
        "_last_active",
        "_loop",
        "_max_body",
        "_paused",
        "_timer",
        "_writable",
        "task",
        "transport",
    )

    def __init__(
        self,
        handler: Handler,
        handoff: Handoff,
        max_body: int,
        connections: Http1Connections,
    ) -> None:
        self._handler = handler
        self._handoff = handoff
        self._max_body = max_body
        self._connections = connections
        self._buffer = bytearray()
        self._close_after = False
        self._head_sent = False
        self._discarding = False
        self._paused = False
        self._writable: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._loop = asyncio.get_running_loop()
        self._last_active = 0.0
        self.task: asyncio.Task[None] | None = None
        self.transport: asyncio.Transport | None = None

    @property
    def busy(self) -> bool:
        """Whether a request is being answered."""
        return self.task is not None

    # ---- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment] # a stream server's transport
        self._connections.open.add(self)
        self._last_active = self._loop.time()
        self._timer = self._loop.call_later(KEEPALIVE_S, self._idle_check)

    def data_received(self, data: bytes) -> None:
        if self._discarding:
            return  # after a refusal: read and dropped until the client closes
        self._buffer += data
        self._last_active = self._loop.time()
        if self.task is None:
            self._next()
        elif self._full() and self.transport is not None:
            self._paused = True  # a pipelined request waits; reading waits with it
            self.transport.pause_reading()

    def _full(self) -> bool:
        return not self._paused and len(self._buffer) > MAX_HEAD_BYTES + self._max_body

    def eof_received(self) -> bool | None:
        # A client that stops sending is gone, as aiohttp's server takes it: the
        # transport closes and the request's task is cancelled (``connection_lost``).
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.open.discard(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.task is not None:
            self.task.cancel()  # the client is gone: its request's attempts end
        # A stream waiting to write goes on to its cancellation (its writes go nowhere).
        self.resume_writing()
        self.transport = None

    def pause_writing(self) -> None:
        if self._writable is None:
            self._writable = self._loop.create_future()

    def resume_writing(self) -> None:
        writable, self._writable = self._writable, None
        if writable is not None and not writable.done():
            writable.set_result(None)

    # ---- requests -------------------------------------------------------------------------

    def _next(self) -> None:
        """Read the next request in the buffer, if it is whole, and answer it."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        buffer = self._buffer
        end = buffer.find(b"\r\n\r\n")
        if (len(buffer) if end < 0 else end) > MAX_HEAD_BYTES:  # a head too long, whole or not
            self._refuse(_Refused(431, "Request Header Fields Too Large"))
            return
        if end < 0:
            return  # the rest of the head is still to come
        try:
            parsed = self._parse(bytes(buffer[:end]))
        except _Refused as refused:
            self._refuse(refused)
            return
        if parsed is None:
            self._hand_off()
            return
        head_of, length, close = parsed
        start = end + 4
        if length > self._max_body:
            self._refuse(_Refused(413, "Request Entity Too Large"))
            return
        if len(buffer) < start + length:
            return  # the rest of the body is still to come
        body = bytes(buffer[start : start + length])
        del buffer[: start + length]
        request = head_of.request(body)
        self._close_after = close
        self._head_sent = False
        self.task = self._loop.create_task(self._answer(request))

    def _parse(self, head: bytes) -> tuple[_Head, int, bool] | None:
        """The request's head, its body's length and whether to close after it; ``None``:
        a request for aiohttp's server."""
        lines = head.split(b"\r\n")
        line = _REQUEST_LINE.fullmatch(lines[0])
        if line is None:
            raise _Refused(400, "Bad Request: the request line")
        method_bytes, target_bytes, version = line.groups()
        method = method_bytes.decode("ascii")
        if (
            version != b"1.1"
            or method not in _SERVED_METHODS
            or not target_bytes.startswith(b"/")
            or target_bytes.startswith(_ADMIN)
        ):
            return None
        fields: list[tuple[str, str]] = []
        length: int | None = None
        close = False
        for raw in lines[1:]:
            header = _HEADER_LINE.fullmatch(raw)
            if header is None:
                raise _Refused(400, "Bad Request: a header line")
            name_bytes, value_bytes = header.groups()
            value_bytes = value_bytes.strip(b" \t")
            name = name_bytes.decode("ascii")
            lowered = name.lower()
            value = value_bytes.decode("utf-8", "surrogateescape")
            if lowered == "content-length":
                if _DIGITS.fullmatch(value_bytes) is None:
                    raise _Refused(400, "Bad Request: Content-Length")
                given = int(value_bytes)
                if length is not None and given != length:
                    raise _Refused(400, "Bad Request: two Content-Length values")
                length = given
            elif lowered in _HANDED_HEADERS:
                return None
            elif lowered == "connection":
                tokens = {token.strip().lower() for token in value.split(",")}
                if "upgrade" in tokens:
                    return None
                close = close or "close" in tokens
            fields.append((name, value))
        target = target_bytes.decode("utf-8", "surrogateescape")
        return _Head(method, target, fields), length or 0, close

    async def _answer(self, request: ClientRequest) -> None:
        try:
            reply = await self._handler(request)
            if isinstance(reply, Reply):
                self._write_reply(reply)
            else:
                await self._write_stream(reply)
        except asyncio.CancelledError:
            return  # the client went away (or the server stops)
        except Exception as exc:  # noqa: BLE001 - reported, and the client told
            self._loop.call_exception_handler(
                {"message": "the gateway failed to answer a request", "exception": exc}
            )
            self._failed()
        finally:
            self.task = None
        self._done()

    def _failed(self) -> None:
        """A 500, or the connection cut when the answer's head has gone out already."""
        self._close_after = True
        if self._head_sent:
            if self.transport is not None:
                self.transport.abort()
            return
        text = b"500 Internal Server Error"
        self._write_head(500, [("Content-Type", "text/plain; charset=utf-8")], len(text), body=text)

    def _done(self) -> None:
        transport = self.transport
        if transport is None:
            return
        if self._close_after:
            transport.close()
            return
        if self._paused:
            self._paused = False
            transport.resume_reading()
        if self._buffer:
            self._next()

    def _write_reply(self, reply: Reply) -> None:
        self._write_head(reply.status, reply.headers, len(reply.body), body=reply.body)

    async def _write_stream(self, reply: StreamReply) -> None:
        try:
            self._write_head(reply.stream.status, reply.headers, None)
        except BaseException:
            reply.stream.response.release()
            raise
        if not await relay(reply, self._write_chunk):
            if self.transport is not None:
                self.transport.abort()  # cut, not ended: the client sees the stream fail
            return
        self._write(b"0\r\n\r\n")

    async def _write_chunk(self, chunk: bytes) -> None:
        if chunk:
            self._write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
        writable = self._writable
        if writable is not None:
            await writable

    def _write_head(
        self,
        status: int,
        headers: tuple[tuple[str, str], ...] | list[tuple[str, str]],
        length: int | None,
        *,
        body: bytes = b"",
    ) -> None:
        """The status line and headers (and a whole ``body``) in one write; ``length``
        ``None``: a chunked body follows."""
        parts = [f"HTTP/1.1 {status} {_reason(status)}\r\n"]
        typed = dated = False
        for name, value in headers:
            if "\r" in name or "\n" in name or "\r" in value or "\n" in value:
                continue  # never a header that would split the answer
            lowered = name.lower()
            typed = typed or lowered == "content-type"
            dated = dated or lowered == "date"
            parts.append(f"{name}: {value}\r\n")
        if not typed:
            parts.append("Content-Type: application/octet-stream\r\n")
        if length is None:
            parts.append("Transfer-Encoding: chunked\r\n")
        else:
            parts.append(f"Content-Length: {length}\r\n")
        if self._close_after:
            parts.append("Connection: close\r\n")
        if not dated:  # the upstream's own, else the gateway's
            parts.append(f"Date: {_date()}\r\n")
        parts.append("\r\n")
        self._head_sent = True
        self._write("".join(parts).encode("utf-8", "surrogateescape") + body)

    def _write(self, data: bytes) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(data)

    def _refuse(self, refused: _Refused) -> None:
        """Answer ``refused``, then close: the sending side at once, the connection once
        the client has closed its own (what it still sends is read and dropped, so that
        unread bytes do not reset the connection before the client has read the answer),
        at the latest after ``LINGER_S``."""
        self._close_after = True
        text = str(refused).encode()
        plain = [("Content-Type", "text/plain; charset=utf-8")]
        self._write_head(refused.status, plain, len(text), body=text)
        self._buffer.clear()
        self._discarding = True
        transport = self.transport
        if transport is None:
            return
        if self._paused:
            self._paused = False
            transport.resume_reading()
        if transport.can_write_eof():
            transport.write_eof()
            self._loop.call_later(LINGER_S, transport.close)
        else:
            transport.close()

    def _hand_off(self) -> None:
        transport = self.transport
        if transport is None:
            return
        self._connections.open.discard(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        data = bytes(self._buffer)
        self._buffer.clear()
        self.transport = None
        if self._paused:
            self._paused = False
            transport.resume_reading()
        self._handoff(transport, data)

    def _idle_check(self) -> None:
        self._timer = None
        transport = self.transport
        if transport is None:
            return
        idle = self._loop.time() - self._last_active
        if self.task is None and idle >= KEEPALIVE_S:
            transport.close()
            return
        wait = KEEPALIVE_S if self.task is not None else KEEPALIVE_S - idle
        self._timer = self._loop.call_later(wait, self._idle_check)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.task is not None:
            self.task.cancel()
        if self.transport is not None:
            self.transport.abort()


class _Head:
    """A request's line and headers, read; its body still to come."""

    __slots__ = ("fields", "method", "target")

    def __init__(self, method: str, target: str, fields: list[tuple[str, str]]) -> None:
        self.method = method
        self.target = target
        self.fields = fields

    def request(self, body: bytes) -> ClientRequest:
        path, query = _split_target(self.target)
        return ClientRequest(
            method=self.method,
            path=path,
            raw_path=self.target,
            query_string=query,
            headers=_headers(self.fields),
            body=body,
        )


def _split_target(target: str) -> tuple[str, str]:
    """The decoded path and query of an origin-form target, as aiohttp's request reads
    them (``yarl``) when it holds escapes."""
    path, _, query = target.partition("?")
    path, _, _fragment = path.partition("#")
    if "%" not in target and "+" not in query and "#" not in query:
        return path, query
    from yarl import URL  # noqa: PLC0415 - aiohttp's own dependency

    url = URL(target, encoded=True)
    return url.path, url.query_string


_MULTIDICT: list[type[CIMultiDict[str]]] = []


def _headers(fields: list[tuple[str, str]]) -> CIMultiDict[str]:
    if not _MULTIDICT:
        from multidict import CIMultiDict  # noqa: PLC0415 - aiohttp's own dependency

        _MULTIDICT.append(CIMultiDict)
    return _MULTIDICT[0](fields)


_REASONS: Final = {status.value: status.phrase for status in http.HTTPStatus}


def _reason(status: int) -> str:
    return _REASONS.get(status, "Unknown")


_DATE: list[tuple[int, str]] = [(0, "")]


def _date() -> str:
    """The ``Date`` header's value, made once a second."""
    now = int(time.time())
    second, text = _DATE[0]
    if second != now:
        text = email.utils.formatdate(now, usegmt=True)
        _DATE[0] = (now, text)
    return text
