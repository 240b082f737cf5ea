"""``H1Pool``: the gateway's own HTTP/1.1 upstream client, on asyncio's protocols.

One request out on a connection of its pool (``upstream_conn``), its answer's head read,
its body handed to the reader as it comes (``upstream_body``): no request or response
object of a library, no timer or task per request. What it does, as aiohttp's client did
it for the gateway (``Upstream`` chooses which of the two sends a request):

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
)
from aiohttp.client_exceptions import ConnectionTimeoutError

from backstay.gateway.upstream_conn import Connection, H1Answer, Stale

# aiohttp >= 3.11 tells a failed name resolution apart.
_DNSError: type[ClientConnectorError] = getattr(
    aiohttp, "ClientConnectorDNSError", ClientConnectorError
)

__all__ = ["KEEPALIVE_S", "H1Answer", "H1Pool", "Origin"]

# An idle connection is closed after this long (aiohttp's connector's default).
KEEPALIVE_S: Final = 15.0
# aiohttp's connector's Happy Eyeballs delay.
_HAPPY_EYEBALLS_S: Final = 0.25
_CLOSE_WAIT_S: Final = 1.0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Origin:
    """Where connections go: ``key`` names the pool (and aiohttp's ``connection_key``,
    the errors' subject); ``tls``: ``https://``."""

    name: str
    host: str
    port: int
    tls: bool
    key: Any


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
        self._idle: dict[str, deque[Connection]] = {}
        self._all: set[Connection] = set()

    async def send(self, origin: Origin, data: bytes, target: str, method: str) -> H1Answer:
        """Write ``data`` (a whole request) to ``origin`` and read the answer's head."""
        connection = self._kept(origin.name)
        if connection is not None:
            try:
                return await self._exchange(connection, data, target, method)
            except Stale:
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

    def put(self, connection: Connection) -> None:
        """Keep ``connection``, whose answer has ended cleanly, for the next request."""
        idle = self._idle.get(connection.origin)
        if idle is None:
            idle = self._idle[connection.origin] = deque()
        now = connection.loop.time()
        connection.since = now
        idle.append(connection)
        while idle and now - idle[0].since > self.keepalive_s:
            idle.popleft().abort()

    def lost(self, connection: Connection) -> None:
        self._all.discard(connection)
        idle = self._idle.get(connection.origin)
        if idle is not None and connection in idle:
            idle.remove(connection)

    def _kept(self, name: str) -> Connection | None:
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

    async def _exchange(
        self, connection: Connection, data: bytes, target: str, method: str
    ) -> H1Answer:
        waiter = connection.start(data, self._read_timeout_s, target, method)
        try:
            return await waiter
        except BaseException:
            connection.abort()  # cancelled or failed: never reused
            raise

    async def _connect(self, origin: Origin, target: str) -> Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout_s):
                connection = await self._open(origin, loop)
        except TimeoutError as exc:
            raise ConnectionTimeoutError(f"Connection timeout to host {target}") from exc
        self._all.add(connection)
        return connection

    async def _open(self, origin: Origin, loop: asyncio.AbstractEventLoop) -> Connection:
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
                lambda: Connection(self, origin.name, loop),
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
