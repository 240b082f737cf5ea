"""``Upstream``: how an attempt's request reaches the provider. Two clients, chosen per
request:

* **The gateway's own** (``upstream_h1``, with ``lean=True``, as the gateway's proxy makes
  it): every ``POST`` to an ``http://`` or ``https://`` upstream whose headers the gateway
  frames itself (no ``Content-Length``, ``Transfer-Encoding`` or ``Expect`` of the
  client's, no CR or LF) — every provider request the gateway forwards. Its own
  kept-alive connections per origin on asyncio's protocols, its answers read as they come
  (``Content-Length``, chunked or to the connection's end; ``gzip`` and ``deflate``
  decoded), with aiohttp's timeouts and exceptions (``upstream_h1``'s docstring).
* **aiohttp's session** (``session.request``): anything else — another method (the model
  listings' ``GET``: the session retries an idempotent request once on a stale kept-alive
  connection), framing headers of the client's, a CR or LF in a header, another scheme —
  and, without ``lean``, every request. Neither client goes through a proxy from the
  environment (the session is made without ``trust_env``) nor speaks HTTP/2.

Both send the same bytes: ``Host`` first, the request's headers in their order, then the
session's defaults the request lacks (``Accept``, ``Accept-Encoding``, ``User-Agent``,
``Content-Type: application/octet-stream``) and ``Content-Length``, header and body in
one write (``test_upstream`` and ``test_upstream_h1`` compare them byte for byte). When
the session would ask for an encoding the gateway's own client does not decode (``br``,
``zstd``: aiohttp with Brotli or zstd installed), the session sends every request.

Without ``lean``, a ``POST`` goes out on a connection of the session's own connector
(its pool, DNS cache, TLS, connect timeout and errors) and its answer is read by the
session's own protocol (aiohttp's ``ResponseHandler``), without a request object,
response object, timers and a body-writer task per request.
"""

from __future__ import annotations

import asyncio
import ssl
import weakref
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    import aiohttp
    from aiohttp import ClientRequest, StreamReader
    from multidict import CIMultiDictProxy
    from yarl import URL

    from backstay.gateway.upstream_h1 import H1Pool, Origin

__all__ = ["BodyReader", "Upstream", "UpstreamResponse", "close_own_connections"]

_OCTET_STREAM: Final = "application/octet-stream"
# Headers that change how the session frames or sends a request: such a request is sent by
# the session itself.
_FRAMING: Final = frozenset({"content-length", "transfer-encoding", "expect"})
# Connections to at most this many origins are kept as templates (an upstream per provider,
# and per run with its own upstream).
_MAX_ORIGINS: Final = 256
# The encodings the gateway's own client decodes (``upstream_body.Decoder``).
_DECODED: Final = frozenset({"gzip", "deflate"})
_SCHEMES: Final = frozenset({"http", "https"})


# The connections of its own of each ``lean`` upstream, by the session it was made with:
# closed with that session (``close_own_connections``).
_OWN: weakref.WeakKeyDictionary[aiohttp.ClientSession, list[H1Pool]] = weakref.WeakKeyDictionary()


async def close_own_connections(session: aiohttp.ClientSession) -> None:
    """Close the connections of its own of every ``lean`` upstream made with ``session``
    (the gateway does it before it closes the session)."""
    for pool in _OWN.pop(session, []):
        await pool.close()


class BodyReader(Protocol):
    """What an attempt and the relay read of an answer's body: aiohttp's
    ``StreamReader`` or the gateway's own client's ``Body``."""

    async def readany(self) -> bytes: ...
    def iter_any(self) -> AsyncIterator[bytes]: ...
    async def read(self) -> bytes: ...


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
    def content(self) -> BodyReader: ...
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
    """Sends attempts: ``POST`` requests on connections of its own with ``lean`` (TLS with
    ``ssl_context``, default: the verified one aiohttp uses), else over ``session``'s (see
    the module docstring). ``close`` (or ``close_own_connections`` of the session) closes
    its own connections; ``session``'s are the session's to close."""

    __slots__ = ("_pool", "_session", "_templates")

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        lean: bool = False,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._session = session
        # One request per origin, never sent: the connector's key for that origin's pool,
        # and the headers the session adds to every request (Host, Accept…).
        self._templates: dict[str, tuple[ClientRequest, Origin | None]] = {}
        self._pool: H1Pool | None = None
        if lean:
            from backstay.gateway.upstream_h1 import H1Pool  # noqa: PLC0415 - with aiohttp

            timeout = session.timeout
            self._pool = H1Pool(
                connect_timeout_s=timeout.connect,
                read_timeout_s=timeout.sock_read,
                ssl_context=ssl_context,
            )
            _OWN.setdefault(session, []).append(self._pool)

    async def close(self) -> None:
        """Close the connections of its own (those of ``lean``)."""
        if self._pool is not None:
            await self._pool.close()

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
        template, origin = self._template(target)
        if origin is not None and self._pool is not None:
            data = _head(method, target, template, headers, body) + body
            return await self._pool.send(origin, data, str(target), method)
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

    def _template(self, target: URL) -> tuple[ClientRequest, Origin | None]:
        """The template of ``target``'s origin, and where the gateway's own client connects
        for it (``None``: not at all)."""
        origin = target.origin()
        key = str(origin)
        known = self._templates.get(key)
        if known is None:
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
            known = self._templates[key] = (template, self._origin(target, key, template))
        return known

    def _origin(self, target: URL, name: str, template: ClientRequest) -> Origin | None:
        """Where the gateway's own client connects for ``target``'s origin, or ``None``
        (not ``lean``, another scheme, or an encoding the session asks for that it does
        not decode)."""
        if self._pool is None:
            return None
        from backstay.gateway.upstream_h1 import Origin  # noqa: PLC0415 - with aiohttp

        asked = template.headers.get("Accept-Encoding", "")
        encodings = {part.strip().lower() for part in asked.split(",") if part.strip()}
        host, port = target.raw_host, target.port
        if target.scheme not in _SCHEMES or not encodings <= _DECODED or not host or not port:
            return None
        tls = target.scheme == "https"
        return Origin(name=name, host=host, port=port, tls=tls, key=template.connection_key)


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
