"""A minimal Redis client for a few read-only commands: RESP2 over one TCP socket.

``backstay health`` reads a handful of keys; redis-py's import alone (its package loads
its asyncio client and, when installed, the OpenTelemetry metrics SDK) costs more CPU
than the whole check. ``RespClient`` sends commands and reads their replies, nothing
else: no pool, no retries, no TLS, no cluster, no RESP3. It takes only a plain
``redis://host:port/db`` location (a password and user name in the URL are sent with
``AUTH``, the database chosen with ``SELECT``) in ``stop`` mode; ``supports`` says so,
and every other location (``rediss://``, ``cluster=yes``, ``wait`` mode) is read through
redis-py as before.

Failures: a connection refused, reset or timed out is ``StoreUnreachable`` (the reason
names host and port, never the password); an error reply is ``RespError`` with the
server's message.
"""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Sequence
from typing import Final

from backstay.store.location import StoreKind, StoreLocation, StoreUnavailable, StoreUnreachable

__all__ = ["Reply", "RespClient", "RespError", "supports"]

# redis-py's defaults in ``backstay.store.redis._client`` (connect, then each reply).
CONNECT_TIMEOUT_S: Final = 2.0
SOCKET_TIMEOUT_S: Final = 5.0
_CRLF: Final = b"\r\n"
_READ_SIZE: Final = 65536

Reply = bytes | int | list["Reply"] | None


class RespError(Exception):
    """An error reply of the server (``-ERR …``), its message as sent."""


def supports(location: StoreLocation) -> bool:
    """Whether ``RespClient`` can read ``location``: a plain ``redis://`` URL of one server
    (not TLS, not a cluster) in ``stop`` mode."""
    if location.kind is not StoreKind.REDIS or location.cluster or not location.url:
        return False
    if location.unavailable is not StoreUnavailable.STOP:
        return False
    parts = urllib.parse.urlsplit(location.url)
    # A user name without a password: redis-py's handling, not repeated here.
    return parts.scheme == "redis" and not (parts.username and parts.password is None)


def _encode(args: Sequence[str | bytes | int]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        raw = arg if isinstance(arg, bytes) else str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(out)


class RespClient:
    """One connection to the server of ``location`` (see the module docstring); open it
    with ``connect()``, then ``pipeline(commands)``; ``close()`` when done."""

    def __init__(self, location: StoreLocation) -> None:
        if not supports(location):
            raise ValueError(f"{location.display}: not a plain redis:// location")
        parts = urllib.parse.urlsplit(location.url or "")
        self._where = location.display
        self._host = parts.hostname or "localhost"
        self._port = parts.port or 6379
        self._user = urllib.parse.unquote(parts.username) if parts.username else None
        self._password = urllib.parse.unquote(parts.password) if parts.password else None
        db = parts.path.strip("/")
        self._db = int(db) if db else 0
        self._sock: socket.socket | None = None
        self._buffer = b""
        self._pos = 0  # where the unread part of ``_buffer`` starts

    def connect(self) -> None:
        """Connect, authenticate and select the database (``StoreUnreachable`` when the
        server does not answer, ``RespError`` when it refuses; closed again either way)."""
        try:
            self._sock = socket.create_connection(
                (self._host, self._port), timeout=CONNECT_TIMEOUT_S
            )
        except OSError as exc:
            raise StoreUnreachable(self._where, self._reason(exc, "connecting to")) from None
        self._sock.settimeout(SOCKET_TIMEOUT_S)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        opening: list[list[str | bytes | int]] = []
        if self._password is not None:
            who = [self._user] if self._user else []
            opening.append(["AUTH", *who, self._password])
        if self._db:
            opening.append(["SELECT", self._db])
        if opening:
            try:
                self.pipeline(opening)
            except RespError:
                self.close()
                raise

    def pipeline(self, commands: Sequence[Sequence[str | bytes | int]]) -> list[Reply]:
        """Send ``commands`` at once and read their replies, in order; the first error
        reply raises ``RespError`` after every reply was read."""
        sock = self._sock
        if sock is None:
            raise RuntimeError("RespClient.connect() first")
        try:
            sock.sendall(b"".join(_encode(command) for command in commands))
            replies = [self._read() for _ in commands]
        except OSError as exc:
            self.close()
            raise StoreUnreachable(self._where, self._reason(exc, "reading from")) from None
        for reply in replies:
            if isinstance(reply, RespError):
                raise reply
        return [r for r in replies if not isinstance(r, RespError)]

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> RespClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- replies ------------------------------------------------------------------------

    def _line(self) -> bytes:
        while True:
            end = self._buffer.find(_CRLF, self._pos)
            if end >= 0:
                line, self._pos = self._buffer[self._pos : end], end + 2
                return line
            self._fill()

    def _exactly(self, size: int) -> bytes:
        while len(self._buffer) - self._pos < size + 2:
            self._fill()
        start, self._pos = self._pos, self._pos + size + 2
        return self._buffer[start : start + size]

    def _fill(self) -> None:
        assert self._sock is not None  # noqa: S101 - only called while connected
        chunk = self._sock.recv(_READ_SIZE)
        if not chunk:
            raise ConnectionResetError("Connection closed by server.")
        self._buffer, self._pos = self._buffer[self._pos :] + chunk, 0

    def _read(self) -> Reply | RespError:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            return RespError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            return None if size < 0 else self._exactly(size)
        if kind == b"*":
            count = int(rest)
            if count < 0:
                return None
            items: list[Reply] = []
            for _ in range(count):
                item = self._read()
                if isinstance(item, RespError):
                    raise item
                items.append(item)
            return items
        raise ConnectionResetError(f"not a RESP2 reply: {line[:40]!r}")

    def _reason(self, exc: OSError, doing: str) -> str:
        """As redis-py says it (host and port, never the password)."""
        what = exc.strerror or str(exc) or type(exc).__name__
        if isinstance(exc, TimeoutError):
            what = "Timeout"
        code = f"Error {exc.errno} " if exc.errno else ""
        return f"{code}{doing} {self._host}:{self._port}. {what.rstrip('.')}."[:200]
