"""``Upstream``: how an attempt's ``POST`` reaches the provider — on the connections of the
gateway's aiohttp session, without a ``ClientSession.request`` per attempt.

A session request builds a request object, a response object, timers and a task that
writes the body, every time: on a gateway that forwards one short JSON request per client
request, about a third of its CPU (docs/benchmarks.md, "Gateway"). ``Upstream.send`` keeps
every part that decides what goes out and what comes back, and skips the rest:

* the connection comes from the session's own connector (its keep-alive pool, DNS cache,
  TLS, connect timeout, and the errors it raises: ``ClientConnectorError``,
  ``ConnectionTimeoutError``…), a connection released to it as a session's is;
* the bytes sent are the ones the session sends: ``Host`` first, the request's headers in
  their order, then the session's defaults the request lacks (``Accept``,
  ``Accept-Encoding``, ``User-Agent``, ``Content-Type: application/octet-stream``) and
  ``Content-Length``, header and body in one write (``test_upstream`` compares the two
  byte for byte);
* the answer is read by the session's own protocol (aiohttp's ``ResponseHandler``: its
  parser, chunked bodies, decompression, the read timeout) and the failures it raises;
* a write that fails is a ``ClientOSError`` ("Can not write request body"), as the
  session's body writer raises it.

Anything else — another method (the session retries an idempotent request once on a
stale kept-alive connection), an ``Expect`` header, framing headers of the client's, a
CR or LF in a header — goes through ``session.request`` as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    import aiohttp
    from aiohttp import ClientRequest, StreamReader
    from multidict import CIMultiDictProxy
    from yarl import URL

__all__ = ["Upstream", "UpstreamResponse"]

_OCTET_STREAM: Final = "application/octet-stream"
# Headers that change how the session frames or sends a request: such a request is sent by
# the session itself.
_FRAMING: Final = frozenset({"content-length", "transfer-encoding", "expect"})
# Connections to at most this many origins are kept as templates (an upstream per provider,
# and per run with its own upstream).
_MAX_ORIGINS: Final = 256


class UpstreamResponse(Protocol):
    """What an attempt reads of an upstream answer: aiohttp's ``ClientResponse`` or
    ``Upstream``'s own."""

    @property
    def status(self) -> int: ...
    @property
    def headers(self) -> CIMultiDictProxy[str]: ...
    @property
    def content_type(self) -> str: ...
    @property
    def content(self) -> StreamReader: ...
    async def read(self) -> bytes: ...
    def release(self) -> Any: ...


class _Answer:
    """An answer read by the connection's protocol; its connection goes back to the pool
    once its body has been read to the end (or is closed when it is released before)."""

    __slots__ = ("_connection", "content", "headers", "status")

    def __init__(
        self,
        status: int,
        headers: CIMultiDictProxy[str],
        content: StreamReader,
        connection: aiohttp.connector.Connection,
    ) -> None:
        self.status = status
        self.headers = headers
        self.content = content
        self._connection: aiohttp.connector.Connection | None = connection
        content.on_eof(self.release)

    @property
    def content_type(self) -> str:
        raw = self.headers.get("Content-Type")
        if raw is None:
            return _OCTET_STREAM
        return raw.split(";", 1)[0].strip().lower()

    async def read(self) -> bytes:
        try:
            return await self.content.read()
        except BaseException:
            self._close()
            raise

    def release(self) -> None:
        """Give the connection back: kept alive when the answer ended cleanly (the
        connector closes it otherwise)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.release()

    def _close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


class Upstream:
    """Sends attempts over ``session``'s connections (see the module docstring)."""

    __slots__ = ("_session", "_templates")

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self._session = session
        # One request per origin, never sent: the connector's key for that origin's pool,
        # and the headers the session adds to every request (Host, Accept…).
        self._templates: dict[str, ClientRequest] = {}

    async def send(
        self, method: str, url: str, headers: Iterable[tuple[str, str]], body: bytes
    ) -> UpstreamResponse:
        """Send one request and read its answer's head; the caller reads or releases it."""
        headers = tuple(headers)
        if method != "POST" or not _plain(headers):
            response: UpstreamResponse = await self._session.request(
                method, url, headers=list(headers), data=body or None, allow_redirects=False
            )
            return response
        from aiohttp.client_exceptions import ConnectionTimeoutError  # noqa: PLC0415
        from yarl import URL  # noqa: PLC0415 - aiohttp's own dependency

        target = URL(url)
        template = self._template(target)
        session = self._session
        connector = session.connector
        if connector is None:  # a closed session: as its own request would say
            raise RuntimeError("Session is closed")
        try:
            connection = await connector.connect(template, traces=[], timeout=session.timeout)
        except TimeoutError as exc:
            raise ConnectionTimeoutError(f"Connection timeout to host {target}") from exc
        try:
            status, answer_headers, payload = await _exchange(
                session,
                connection,
                _head(method, target, template, headers, body) + body,
                target,
                method,
                headers,
            )
        except BaseException:
            connection.close()
            raise
        return _Answer(status, answer_headers, payload, connection)

    def _template(self, target: URL) -> ClientRequest:
        origin = target.origin()
        key = str(origin)
        template = self._templates.get(key)
        if template is None:
            from aiohttp import ClientRequest  # noqa: PLC0415

            if len(self._templates) >= _MAX_ORIGINS:
                self._templates.clear()
            template = ClientRequest(
                "GET",
                origin,
                loop=asyncio.get_running_loop(),
                session=self._session,
                ssl=True,
            )
            self._templates[key] = template
        return template


async def _exchange(  # noqa: PLR0917 - one exchange's parts
    session: aiohttp.ClientSession,
    connection: aiohttp.connector.Connection,
    data: bytes,
    target: URL,
    method: str,
    headers: tuple[tuple[str, str], ...],
) -> tuple[int, CIMultiDictProxy[str], StreamReader]:
    """Write ``data`` on ``connection`` and read the answer's head, as the session does."""
    from aiohttp import ClientOSError, ClientResponseError, RequestInfo  # noqa: PLC0415
    from aiohttp.http_exceptions import HttpProcessingError  # noqa: PLC0415
    from multidict import CIMultiDict, CIMultiDictProxy  # noqa: PLC0415

    protocol = connection.protocol
    connector = session.connector
    if protocol is None or connector is None or protocol.transport is None:
        raise ClientOSError(None, f"Can not write request body for {target!s}")
    timeout = session.timeout
    protocol.set_response_params(
        read_until_eof=True,
        auto_decompress=session.auto_decompress,
        read_timeout=timeout.sock_read,
        timeout_ceil_threshold=connector._timeout_ceil_threshold,
    )
    transport = protocol.transport
    if transport.is_closing():
        raise ClientOSError(None, f"Can not write request body for {target!s}")
    transport.write(data)
    protocol.start_timeout()
    while True:
        try:
            message, payload = await protocol.read()
        except HttpProcessingError as exc:
            sent = CIMultiDictProxy(CIMultiDict(headers))
            raise ClientResponseError(
                RequestInfo(target, method, sent, target),
                (),
                status=exc.code,
                message=exc.message,
                headers=exc.headers,
            ) from exc
        # An informational answer (100 Continue…) is followed by the real one.
        if message.code < 100 or message.code > 199 or message.code == 101:
            return message.code, message.headers, payload


def _plain(headers: tuple[tuple[str, str], ...]) -> bool:
    """Whether the session would send ``headers`` as they are: no framing of their own, no
    CR or LF (which the session refuses)."""
    for name, value in headers:
        if name.lower() in _FRAMING or "\r" in name or "\n" in name:
            return False
        if "\r" in value or "\n" in value:
            return False
    return True


def _head(
    method: str,
    target: URL,
    template: ClientRequest,
    headers: tuple[tuple[str, str], ...],
    body: bytes,
) -> bytes:
    """The request line and headers the session writes for a ``POST`` of ``body``."""
    given = {name.lower() for name, _ in headers}
    lines = [f"{method} {target.raw_path_qs} HTTP/1.1"]
    defaults = template.headers
    host = next((value for name, value in headers if name.lower() == "host"), None)
    lines.append(f"Host: {defaults['Host'] if host is None else host}")
    lines.extend(f"{name}: {value}" for name, value in headers if name.lower() != "host")
    lines.extend(
        f"{name}: {value}"
        for name, value in defaults.items()
        if name.lower() != "host" and name.lower() not in given
    )
    lines.append(f"Content-Length: {len(body)}")
    if "content-type" not in given:
        lines.append(f"Content-Type: {_OCTET_STREAM}")
    lines.append("\r\n")
    return "\r\n".join(lines).encode("utf-8")
