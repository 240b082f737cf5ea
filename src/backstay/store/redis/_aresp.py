"""An asyncio Redis client for the gateway's per-request calls: RESP2, one pipelined
connection per event loop, on asyncio's protocols.

A gateway on a Redis store asks its limiter for every request it forwards. Made
synchronously, that round trip holds the gateway's event loop, and with it every other
request's bytes, for as long as ``redis-server`` takes to answer (on a busy machine, as
long as it waits for a core). ``AsyncResp.command`` sends the command and awaits its reply
while the loop serves the others; commands of concurrent requests share the one
connection, their replies read in the order they were sent. redis-py's asyncio client does
the same at three times the CPU a command (its stream reader, its pool, its layers).

Like ``_resp.RespClient`` it takes a plain ``redis://host:port/db`` location (a password
and user name in the URL sent with ``AUTH``, the database chosen with ``SELECT``) in
``stop`` mode (``_resp.supports``); for any other the caller stays on redis-py.

Failures: an error reply is ``RespError`` with the server's message; a connection refused,
reset or closed, or a reply later than ``SOCKET_TIMEOUT_S``, fails every command waiting
on that connection with ``ConnectionError`` (a ``TimeoutError`` for the late reply) and
closes it; the next command connects again. A command whose caller was cancelled still has
its reply read (and dropped), so the replies stay in step.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator
from typing import Final, cast

from backstay.store.location import StoreLocation
from backstay.store.redis._resp import CONNECT_TIMEOUT_S, SOCKET_TIMEOUT_S, RespError, supports

__all__ = ["AsyncResp", "Reply"]

Reply = bytes | int | list["Reply"] | None
_CRLF: Final = b"\r\n"


def _encode(args: tuple[str | bytes, ...]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        raw = arg if isinstance(arg, bytes) else arg.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(out)


def _parse(buffer: bytes, pos: int) -> tuple[Reply | RespError, int] | None:
    """The reply starting at ``pos`` and where the next starts; ``None`` when incomplete."""
    end = buffer.find(_CRLF, pos)
    if end < 0:
        return None
    kind, rest, after = buffer[pos : pos + 1], buffer[pos + 1 : end], end + 2
    if kind == b"$":
        size = int(rest)
        if size < 0:
            return None, after
        if len(buffer) < after + size + 2:
            return None
        return buffer[after : after + size], after + size + 2
    if kind == b":":
        return int(rest), after
    if kind == b"+":
        return rest, after
    if kind == b"-":
        return RespError(rest.decode(errors="replace")), after
    if kind == b"*":
        count = int(rest)
        if count < 0:
            return None, after
        items: list[Reply] = []
        for _ in range(count):
            found = _parse(buffer, after)
            if found is None:
                return None
            item, after = found
            if isinstance(item, RespError):
                raise item
            items.append(item)
        return items, after
    raise ConnectionError(f"not a RESP2 reply: {buffer[pos : pos + 40]!r}")


class _Connection(asyncio.Protocol):
    """One connection: replies resolve the waiting futures in the order sent."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._waiting: collections.deque[tuple[asyncio.Future[Reply], float]] = collections.deque()
        self._buffer = b""
        self._watchdog: asyncio.TimerHandle | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A TCP transport (uvloop's is no subclass of asyncio's, hence the cast).
        self._transport = cast("asyncio.Transport", transport)

    def send(self, packed: bytes) -> asyncio.Future[Reply]:
        if self.closed or self._transport is None:
            raise ConnectionError("the connection to Redis is closed")
        future: asyncio.Future[Reply] = self._loop.create_future()
        self._waiting.append((future, time.monotonic()))
        self._transport.write(packed)
        if self._watchdog is None:
            self._watchdog = self._loop.call_later(SOCKET_TIMEOUT_S, self._check)
        return future

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer + data if self._buffer else data
        pos = 0
        try:
            while self._waiting:
                found = _parse(buffer, pos)
                if found is None:
                    break
                reply, pos = found
                future, _ = self._waiting.popleft()
                if not future.done():  # its caller may have been cancelled
                    if isinstance(reply, RespError):
                        future.set_exception(reply)
                    else:
                        future.set_result(reply)
        except (RespError, ConnectionError, ValueError) as exc:
            self._fail(ConnectionError(f"an unreadable reply from Redis: {exc}"))
            return
        self._buffer = buffer[pos:]

    def eof_received(self) -> bool:
        # The server closed it (a restart, its idle ``timeout``, ``CLIENT KILL``): closed
        # here at once, so the next command connects again.
        self._fail(ConnectionError("Redis closed the connection"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError(f"Redis closed the connection: {exc or 'at its end'}"))

    def _check(self) -> None:
        self._watchdog = None
        if not self._waiting:
            return
        oldest = self._waiting[0][1]
        late = time.monotonic() - oldest
        if late >= SOCKET_TIMEOUT_S:
            self._fail(TimeoutError(f"Redis did not answer within {SOCKET_TIMEOUT_S:.0f} s"))
            return
        self._watchdog = self._loop.call_later(SOCKET_TIMEOUT_S - late, self._check)

    def _fail(self, exc: Exception) -> None:
        self.closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        while self._waiting:
            future, _ = self._waiting.popleft()
            if not future.done():
                future.set_exception(exc)
        if self._transport is not None:
            self._transport.close()

    def close(self) -> None:
        self._fail(ConnectionError("closed"))


async def _closed_at_shutdown(conn: _Connection) -> AsyncIterator[None]:
    try:
        yield
    finally:
        if not conn.closed:
            conn.close()
            await asyncio.sleep(0)  # one more turn of the loop: the transport's socket closes


class _LoopState:
    """The connection of one event loop (one per thread: a thread runs one loop at a time)."""

    __slots__ = ("closer", "conn", "connecting", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.conn: _Connection | None = None
        self.connecting: asyncio.Future[_Connection] | None = None
        self.closer: AsyncIterator[None] | None = None


class AsyncResp:
    """Commands to the server of ``location``: one connection per event loop, each made,
    used and closed on its own loop's thread only."""

    def __init__(self, location: StoreLocation) -> None:
        if not supports(location):
            raise ValueError(f"{location.display}: not a plain redis:// location")
        parts = urllib.parse.urlsplit(location.url or "")
        self._host = parts.hostname or "localhost"
        self._port = parts.port or 6379
        opening: list[tuple[str | bytes, ...]] = []
        if parts.password is not None:
            user = (urllib.parse.unquote(parts.username),) if parts.username else ()
            opening.append(("AUTH", *user, urllib.parse.unquote(parts.password)))
        db = parts.path.strip("/")
        if db and int(db):
            opening.append(("SELECT", str(int(db))))
        self._opening = tuple(_encode(command) for command in opening)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._states: list[_LoopState] = []

    async def command(self, *args: str | bytes) -> Reply:
        """The reply to ``args`` (``RespError`` for an error reply)."""
        state: _LoopState | None = getattr(self._local, "state", None)
        loop = asyncio.get_running_loop()
        if state is None or state.loop is not loop:
            state = self._local.state = _LoopState(loop)
            with self._lock:
                self._states = [s for s in self._states if not s.loop.is_closed()]
                self._states.append(state)
        conn = state.conn
        if conn is None or conn.closed:
            conn = await self._connect(state)
        return await conn.send(_encode(args))

    async def _connect(self, state: _LoopState) -> _Connection:
        loop = state.loop
        pending = state.connecting
        if pending is not None and not pending.done():
            return await asyncio.shield(pending)
        state.connecting = pending = loop.create_future()
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                _, conn = await loop.create_connection(
                    lambda: _Connection(loop), self._host, self._port
                )
                for packed in self._opening:
                    await conn.send(packed)
        except BaseException as exc:
            pending.set_exception(exc if isinstance(exc, Exception) else ConnectionError())
            pending.exception()  # read here: a waiter, if any, gets it too
            raise
        state.conn = conn
        # Closed on its loop when the loop shuts its async generators down (asyncio.run and
        # Runner do, before closing it): a transport closed later could not finish closing.
        state.closer = _closed_at_shutdown(conn)
        await anext(state.closer)
        pending.set_result(conn)
        return conn

    def close(self) -> None:
        """Close every loop's connection, on that loop (one closed already closed them)."""
        with self._lock:
            states, self._states = self._states, []
        for state in states:
            conn, state.conn = state.conn, None
            if conn is None or conn.closed or state.loop.is_closed():
                continue
            with contextlib.suppress(RuntimeError):  # its loop closed meanwhile
                state.loop.call_soon_threadsafe(conn.close)
