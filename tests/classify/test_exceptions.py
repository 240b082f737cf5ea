"""``classify(exc)`` on transport failures of every HTTP stack backstay meets.

Wherever the failure can be caused for real it is: clients talk to small servers on
127.0.0.1 that refuse, reset, hang up, stall or answer 429, and the exception the client
library raises is what gets classified. Failures that would need a real resolver or a
remote TLS peer are built the way the libraries build them. Nothing leaves loopback.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import errno
import ipaddress
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import httpcore
import httpx
import openai
import pytest
import requests
import urllib3
from aiohttp.abc import AbstractResolver
from aiohttp.client_reqrep import ConnectionKey

from backstay import CODES, Failure, FailureKind, classify

_LOOPBACK = "127.0.0.1"
_SERVER_LIFETIME_S = 20.0  # a server thread never outlives this, whatever a test does
_IO_TIMEOUT_S = 1.0
_SHORT_TIMEOUT_S = 0.3  # the client-side timeout in the timeout cases
_MAX_REQUEST_BYTES = 1 << 20

# (kind, retryable) as the taxonomy defines them for the expected codes.
_NETWORK = (FailureKind.NETWORK, True)
# The error contract: an SSL error is a NETWORK failure that is not retried.
_SSL_FAILED = (FailureKind.NETWORK, False)
_TIMED_OUT = (FailureKind.TIMEOUT, True)
_RATE_LIMIT = (FailureKind.RATE_LIMIT, True)
_SERVER_ERROR = (FailureKind.SERVER_ERROR, True)
_CANCELLED = (FailureKind.CANCELLED, False)
_INVALID_REQUEST = (FailureKind.INVALID_REQUEST, False)
_UNKNOWN = (FailureKind.UNKNOWN, True)

Handler = Callable[[socket.socket], None]


# --------------------------------------------------------------------------- servers


def _read_request(conn: socket.socket) -> bytes:
    """Read one HTTP request (head and Content-Length body), bounded in time and size."""
    data = b""
    deadline = time.monotonic() + 2 * _IO_TIMEOUT_S
    while b"\r\n\r\n" not in data and len(data) < _MAX_REQUEST_BYTES:
        if time.monotonic() > deadline:
            return data
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            length = min(int(value.strip()), _MAX_REQUEST_BYTES)
    while len(body) < length and time.monotonic() < deadline:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return data


def _close_after_request(conn: socket.socket) -> None:
    _read_request(conn)
    conn.close()


def _reset_after_request(conn: socket.socket) -> None:
    _read_request(conn)
    # SO_LINGER with a zero timeout turns close() into a TCP RST.
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def _never_answer(conn: socket.socket) -> None:
    _read_request(conn)  # the connection stays open, silent, until the server stops


def _never_read(conn: socket.socket) -> None:
    return  # accepted, never read: the client's send buffer fills up


def _headers_then_silence(conn: socket.socket) -> None:
    _read_request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")


def _truncated_chunked_body(conn: socket.socket) -> None:
    _read_request(conn)
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"
        b"10\r\nhello"
    )
    conn.close()


def _plain_http_to_tls(conn: socket.socket) -> None:
    conn.recv(65536)  # a TLS ClientHello, answered in plain HTTP
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    conn.close()


def _answer(
    status: int, reason: str, headers: tuple[tuple[str, str], ...] = (), body: bytes = b""
) -> Handler:
    def handle(conn: socket.socket) -> None:
        _read_request(conn)
        lines = [
            f"HTTP/1.1 {status} {reason}",
            f"Content-Length: {len(body)}",
            "Connection: close",
            *(f"{name}: {value}" for name, value in headers),
        ]
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        conn.close()

    return handle


_RATE_LIMITED = _answer(
    429,
    "Too Many Requests",
    (("Retry-After", "7"), ("Content-Type", "application/json")),
    b'{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}',
)
_UNAVAILABLE = _answer(
    503, "Service Unavailable", (("Content-Type", "text/plain"),), b"upstream unavailable"
)
_INTERNAL = _answer(500, "Internal Server Error", (("Content-Type", "text/plain"),), b"boom")
_OVERLOADED = _answer(
    529,
    "Overloaded",
    (("Content-Type", "application/json"),),
    b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
)
_PROXY_REFUSES = _answer(502, "Bad Gateway")


class _Server:
    """A one-thread TCP server on 127.0.0.1 that hands each connection to ``handler``."""

    def __init__(self, handler: Handler, *, tls: ssl.SSLContext | None = None) -> None:
        self._handler = handler
        self._tls = tls
        self._listener = socket.create_server((_LOOPBACK, 0))
        self._listener.settimeout(0.05)
        self.port: int = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(
            target=self._serve, name=f"loopback-server-{self.port}", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{_LOOPBACK}:{self.port}"

    @property
    def https_url(self) -> str:
        return f"https://{_LOOPBACK}:{self.port}"

    def _serve(self) -> None:
        deadline = time.monotonic() + _SERVER_LIFETIME_S
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(_IO_TIMEOUT_S)
            self._held.append(conn)
            try:
                if self._tls is not None:
                    conn = self._tls.wrap_socket(conn, server_side=True)
                    self._held.append(conn)
                self._handler(conn)
            except OSError:
                continue  # the client hung up or rejected us first: often the point

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in self._held:
            conn.close()
        self._listener.close()


class Loopback:
    """Servers, closed ports and a resolver-free world for one test; all torn down after."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._monkeypatch = monkeypatch
        self._servers: list[_Server] = []
        self._sockets: list[socket.socket] = []

    def serve(self, handler: Handler, *, tls: ssl.SSLContext | None = None) -> _Server:
        server = _Server(handler, tls=tls)
        self._servers.append(server)
        return server

    def closed_port(self) -> int:
        """A port bound on 127.0.0.1 with nobody listening: connecting is refused."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sockets.append(sock)
        sock.bind((_LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port

    def unanswered_port(self) -> int:
        """A port whose accept queue is full, so a new connect never completes."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sockets.append(listener)
        listener.bind((_LOOPBACK, 0))
        listener.listen(0)
        port: int = listener.getsockname()[1]
        for _ in range(4):
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._sockets.append(filler)
            filler.setblocking(False)
            filler.connect_ex((_LOOPBACK, port))
        time.sleep(0.05)
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sockets.append(probe)
        probe.settimeout(0.2)
        try:
            probe.connect((_LOOPBACK, port))
        except TimeoutError:
            return port
        pytest.skip("this kernel completes connections beyond a full accept queue")

    def forbid_name_resolution(self) -> None:
        """Every name except 127.0.0.1 fails to resolve, as an unknown host does."""
        real_getaddrinfo = socket.getaddrinfo

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if host in (_LOOPBACK, _LOOPBACK.encode()):
                return real_getaddrinfo(host, *args, **kwargs)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

        self._monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    def close(self) -> None:
        for server in self._servers:
            server.stop()
        for sock in self._sockets:
            sock.close()


@pytest.fixture
def loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[Loopback]:
    net = Loopback(monkeypatch)
    try:
        yield net
    finally:
        net.close()


# --------------------------------------------------------------------------- helpers

Produce = Callable[[Loopback], BaseException]


def _raised(action: Callable[[], object]) -> BaseException:
    try:
        action()
    except BaseException as exc:
        return exc
    pytest.fail("the action was expected to fail, and it succeeded")


def _run(coro_factory: Callable[[], Coroutine[Any, Any, object]]) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(coro_factory(), timeout=5)

    asyncio.run(bounded())


Expected = tuple[str, FailureKind, bool]  # (code, kind, retryable)


def _check(exc: BaseException, raises: type[BaseException], expected: Expected) -> Failure:
    """``exc`` is what the scenario should raise, and classifies as ``expected``."""
    assert isinstance(exc, raises), f"the scenario raised {type(exc).__qualname__}: {exc!r}"
    failure = classify(exc)
    got = (failure.code, failure.kind, failure.retryable)
    assert got == expected, f"{type(exc).__qualname__}: {exc!r}"
    return failure


def _case(
    produce: Produce,
    raises: type[BaseException],
    code: str,
    kind_and_retryable: tuple[FailureKind, bool],
    *,
    id: str,
) -> Any:
    return pytest.param(produce, raises, (code, *kind_and_retryable), id=id)


_CASE_ARGS = ("produce", "raises", "expected")


def _cert_verify_error() -> ssl.SSLCertVerificationError:
    err = ssl.SSLCertVerificationError(
        1,
        "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
        "self-signed certificate (_ssl.c:1006)",
    )
    err.verify_code = 18
    err.verify_message = "self-signed certificate"
    return err


def _throw(exc: BaseException) -> None:
    raise exc


def _raise_from(outer: BaseException, cause: BaseException) -> BaseException:
    """``outer`` raised ``from cause``, as the client libraries raise their wrappers."""

    def wrap() -> None:
        try:
            _throw(cause)
        except BaseException as inner:
            raise outer from inner

    return _raised(wrap)


# --------------------------------------------------------------------------- built-ins


def _socket_refused(net: Loopback) -> BaseException:
    return _raised(lambda: socket.create_connection((_LOOPBACK, net.closed_port()), timeout=2))


def _socket_reset(net: Loopback) -> BaseException:
    server = net.serve(_reset_after_request)
    with socket.create_connection((_LOOPBACK, server.port), timeout=2) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        return _raised(lambda: sock.recv(1024) or sock.recv(1024))


def _broken_pipe(net: Loopback) -> BaseException:
    ours, theirs = socket.socketpair()
    theirs.close()
    with ours:

        def send_until_broken() -> None:
            for _ in range(8):
                ours.sendall(b"x" * 65536)

        return _raised(send_until_broken)


def _socket_read_timeout(net: Loopback) -> BaseException:
    server = net.serve(_never_answer)
    with socket.create_connection((_LOOPBACK, server.port), timeout=2) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        sock.settimeout(_SHORT_TIMEOUT_S)
        return _raised(lambda: sock.recv(1024))


def _socket_connect_timeout(net: Loopback) -> BaseException:
    port = net.unanswered_port()
    return _raised(lambda: socket.create_connection((_LOOPBACK, port), timeout=_SHORT_TIMEOUT_S))


def _gaierror(net: Loopback) -> BaseException:
    # AI_NUMERICHOST makes getaddrinfo fail on any name without asking a resolver.
    return _raised(
        lambda: socket.getaddrinfo("api.example.invalid", 443, flags=socket.AI_NUMERICHOST)
    )


def _ssl_handshake_with_plain_http(net: Loopback) -> BaseException:
    server = net.serve(_plain_http_to_tls)
    context = ssl.create_default_context()
    with socket.create_connection((_LOOPBACK, server.port), timeout=2) as sock:
        return _raised(lambda: context.wrap_socket(sock, server_hostname=_LOOPBACK))


def _os_error(code: int, text: str) -> Produce:
    return lambda net: OSError(code, text)


def _cancelled_task(net: Loopback) -> BaseException:
    async def cancel_a_sleeper() -> None:
        task = asyncio.create_task(asyncio.sleep(10))
        await asyncio.sleep(0)
        task.cancel()
        await task

    return _raised(lambda: asyncio.run(cancel_a_sleeper()))


def _task_group_refused(net: Loopback) -> BaseException:
    port = net.closed_port()

    async def connect_in_group() -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(asyncio.open_connection(_LOOPBACK, port))

    return _raised(lambda: _run(connect_in_group))


BUILTIN_CASES = [
    _case(
        _socket_refused,
        ConnectionRefusedError,
        "ERR_CONNECTION_REFUSED",
        _NETWORK,
        id="socket-connect-to-closed-port-is-connection-refused",
    ),
    _case(
        _socket_reset,
        ConnectionResetError,
        "ERR_CONNECTION_RESET",
        _NETWORK,
        id="socket-recv-after-peer-rst-is-connection-reset",
    ),
    _case(
        _broken_pipe,
        BrokenPipeError,
        "ERR_CONNECTION_RESET",
        _NETWORK,
        id="send-to-closed-peer-broken-pipe-is-connection-reset",
    ),
    _case(
        _socket_read_timeout,
        TimeoutError,
        "ERR_TIMEOUT",
        _TIMED_OUT,
        id="socket-recv-timeout-is-timeout",
    ),
    _case(
        _socket_connect_timeout,
        socket.timeout,
        "ERR_TIMEOUT",
        _TIMED_OUT,
        id="socket-timeout-on-connect-is-timeout",
    ),
    _case(_gaierror, socket.gaierror, "ERR_DNS_FAILURE", _NETWORK, id="gaierror-is-dns-failure"),
    _case(
        _ssl_handshake_with_plain_http,
        ssl.SSLError,
        "ERR_SSL_ERROR",
        _SSL_FAILED,
        id="tls-handshake-answered-in-plain-http-is-ssl-error",
    ),
    _case(
        lambda net: _cert_verify_error(),
        ssl.SSLCertVerificationError,
        "ERR_SSL_CERTIFICATE",
        _NETWORK,
        id="ssl-cert-verification-error-is-ssl-certificate",
    ),
    _case(
        _os_error(errno.ECONNREFUSED, "Connection refused"),
        OSError,
        "ERR_CONNECTION_REFUSED",
        _NETWORK,
        id="oserror-econnrefused-is-connection-refused",
    ),
    _case(
        _os_error(errno.ENETUNREACH, "Network is unreachable"),
        OSError,
        "ERR_NETWORK_UNREACHABLE",
        _NETWORK,
        id="oserror-enetunreach-is-network-unreachable",
    ),
    _case(
        _os_error(errno.EHOSTUNREACH, "No route to host"),
        OSError,
        "ERR_NETWORK_UNREACHABLE",
        _NETWORK,
        id="oserror-ehostunreach-is-network-unreachable",
    ),
    _case(
        _os_error(errno.ETIMEDOUT, "Connection timed out"),
        OSError,
        "ERR_TIMEOUT",
        _TIMED_OUT,
        id="oserror-etimedout-is-timeout",
    ),
    _case(
        _os_error(errno.ENOENT, "No such file or directory"),
        OSError,
        "ERR_UNKNOWN",
        _UNKNOWN,
        id="oserror-enoent-is-not-a-transport-failure",
    ),
    _case(
        _cancelled_task,
        asyncio.CancelledError,
        "ERR_CANCELLED",
        _CANCELLED,
        id="cancelled-task-is-cancelled-and-not-retryable",
    ),
    _case(
        lambda net: KeyboardInterrupt(),
        KeyboardInterrupt,
        "ERR_CANCELLED",
        _CANCELLED,
        id="keyboard-interrupt-is-cancelled-and-not-retryable",
    ),
    _case(
        _task_group_refused,
        ExceptionGroup,
        "ERR_CONNECTION_REFUSED",
        _NETWORK,
        id="task-group-of-a-refused-connection-is-connection-refused",
    ),
    _case(
        lambda net: BaseExceptionGroup(
            "tasks", [asyncio.CancelledError(), ConnectionResetError(errno.ECONNRESET, "reset")]
        ),
        BaseExceptionGroup,
        "ERR_CONNECTION_RESET",
        _NETWORK,
        id="group-classifies-by-its-failure-not-by-its-cancelled-siblings",
    ),
    _case(
        lambda net: BaseExceptionGroup("tasks", [asyncio.CancelledError(), KeyboardInterrupt()]),
        BaseExceptionGroup,
        "ERR_CANCELLED",
        _CANCELLED,
        id="group-of-only-cancellations-is-cancelled",
    ),
    _case(
        lambda net: ExceptionGroup("outer", [ExceptionGroup("inner", [TimeoutError("timed out")])]),
        ExceptionGroup,
        "ERR_TIMEOUT",
        _TIMED_OUT,
        id="nested-groups-classify-by-their-innermost-failure",
    ),
]


# --------------------------------------------------------------------------- httpx / httpcore


def _httpx_get(url: str, **kwargs: Any) -> Callable[[], object]:
    def get() -> object:
        with httpx.Client(**kwargs) as client:
            return client.get(url)

    return get


def _httpx_refused(net: Loopback) -> BaseException:
    return _raised(_httpx_get(f"http://{_LOOPBACK}:{net.closed_port()}/", timeout=2))


def _httpcore_refused(net: Loopback) -> BaseException:
    url = f"http://{_LOOPBACK}:{net.closed_port()}/"

    def get() -> object:
        with httpcore.ConnectionPool() as pool:
            return pool.request("GET", url)

    return _raised(get)


def _httpx_connect_timeout(net: Loopback) -> BaseException:
    url = f"http://{_LOOPBACK}:{net.unanswered_port()}/"
    return _raised(_httpx_get(url, timeout=httpx.Timeout(_SHORT_TIMEOUT_S)))


def _httpx_read_timeout(net: Loopback) -> BaseException:
    server = net.serve(_never_answer)
    return _raised(_httpx_get(server.url, timeout=httpx.Timeout(2, read=_SHORT_TIMEOUT_S)))


def _httpx_write_timeout(net: Loopback) -> BaseException:
    server = net.serve(_never_read)

    def chunks() -> Iterator[bytes]:
        block = b"x" * (1 << 20)
        for _ in range(256):
            yield block

    def post() -> object:
        with httpx.Client(timeout=httpx.Timeout(2, write=_SHORT_TIMEOUT_S)) as client:
            return client.post(server.url, content=chunks())

    return _raised(post)


def _httpx_pool_timeout(net: Loopback) -> BaseException:
    server = net.serve(_headers_then_silence)
    limits = httpx.Limits(max_connections=1)

    def second_request_while_first_holds_the_pool() -> None:
        timeout = httpx.Timeout(2, pool=_SHORT_TIMEOUT_S)
        with (
            httpx.Client(limits=limits, timeout=timeout) as client,
            client.stream("GET", server.url),
        ):
            client.get(server.url)

    return _raised(second_request_while_first_holds_the_pool)


def _httpx_reset(net: Loopback) -> BaseException:
    return _raised(_httpx_get(net.serve(_reset_after_request).url, timeout=2))


def _httpx_disconnected(net: Loopback) -> BaseException:
    return _raised(_httpx_get(net.serve(_close_after_request).url, timeout=2))


def _httpx_truncated_body(net: Loopback) -> BaseException:
    return _raised(_httpx_get(net.serve(_truncated_chunked_body).url, timeout=2))


def _httpx_proxy_refuses(net: Loopback) -> BaseException:
    proxy = net.serve(_PROXY_REFUSES)
    target = f"https://{_LOOPBACK}:{net.closed_port()}/"
    return _raised(_httpx_get(target, proxy=proxy.url, timeout=2))


def _httpx_unsupported_scheme(net: Loopback) -> BaseException:
    return _raised(_httpx_get(f"ftp://{_LOOPBACK}:{net.closed_port()}/", timeout=2))


def _httpx_status(handler: Handler) -> Produce:
    def produce(net: Loopback) -> BaseException:
        url = net.serve(handler).url

        def get() -> None:
            with httpx.Client(timeout=2) as client:
                client.get(url).raise_for_status()

        return _raised(get)

    return produce


def _httpx_tls_to_plain(net: Loopback) -> BaseException:
    return _raised(_httpx_get(net.serve(_plain_http_to_tls).https_url, timeout=2))


def _httpx_unresolvable(net: Loopback) -> BaseException:
    net.forbid_name_resolution()
    return _raised(_httpx_get("http://api.example.invalid/", timeout=2))


def _httpx_cert_rejected(net: Loopback) -> BaseException:
    # httpcore raises its ConnectError from the ssl error; httpx re-raises its own from that.
    cert_error = _cert_verify_error()
    inner = _raise_from(httpcore.ConnectError(str(cert_error)), cert_error)
    request = httpx.Request("GET", "https://api.example.invalid/")
    return _raise_from(httpx.ConnectError(str(cert_error), request=request), inner)


HTTPX_CASES = [
    _case(
        _httpx_refused,
        httpx.ConnectError,
        "ERR_CONNECTION_REFUSED",
        _NETWORK,
        id="httpx-connect-error-from-refused-port-is-connection-refused",
    ),
    _case(
        _httpcore_refused,
        httpcore.ConnectError,
        "ERR_CONNECTION_REFUSED",
        _NETWORK,
        id="httpcore-connect-error-from-refused-port-is-connection-refused",
    ),
    _case(
        _httpx_connect_timeout,
        httpx.ConnectTimeout,
        "ERR_CONNECT_TIMEOUT",
        _TIMED_OUT,
        id="httpx-connect-timeout-is-connect-timeout",
    ),
    _case(
        _httpx_read_timeout,
        httpx.ReadTimeout,
        "ERR_READ_TIMEOUT",
        _TIMED_OUT,
        id="httpx-read-timeout-on-silent-server-is-read-timeout",
    ),
    _case(
        _httpx_write_timeout,
        httpx.WriteTimeout,
        "ERR_WRITE_TIMEOUT",
        _TIMED_OUT,
        id="httpx-write-timeout-on-server-that-never-reads-is-write-timeout",
    ),
    _case(
        _httpx_pool_timeout,
        httpx.PoolTimeout,
        "ERR_POOL_TIMEOUT",
        _TIMED_OUT,
        id="httpx-pool-timeout-is-pool-timeout",
    ),
    _case(
        _httpx_reset,
        httpx.ReadError,
        "ERR_CONNECTION_RESET",
        _NETWORK,
        id="httpx-read-error-from-peer-rst-is-connection-reset",
    ),
    _case(
        _httpx_disconnected,
        httpx.RemoteProtocolError,
        "ERR_CONNECTION_CLOSED",
        _NETWORK,
        id="httpx-remote-protocol-error-on-hang-up-is-connection-closed",
    ),
    _case(
        _httpx_truncated_body,
        httpx.RemoteProtocolError,
        "ERR_CONNECTION_CLOSED",
        _NETWORK,
        id="httpx-remote-protocol-error-on-truncated-body-is-connection-closed",
    ),
    _case(
        _httpx_proxy_refuses,
        httpx.ProxyError,
        "ERR_PROXY_ERROR",
        _NETWORK,
        id="httpx-proxy-error-is-proxy-error",
    ),
    _case(
        _httpx_unsupported_scheme,
        httpx.UnsupportedProtocol,
        "ERR_INVALID_URL",
        _INVALID_REQUEST,
        id="httpx-unsupported-protocol-is-invalid-url-and-not-retryable",
    ),
    _case(
        _httpx_status(_RATE_LIMITED),
        httpx.HTTPStatusError,
        "ERR_HTTP_429_RATE_LIMITED",
        _RATE_LIMIT,
        id="httpx-http-status-error-429-is-rate-limited",
    ),
    _case(
        _httpx_status(_UNAVAILABLE),
        httpx.HTTPStatusError,
        "ERR_HTTP_503_UNAVAILABLE",
        _SERVER_ERROR,
        id="httpx-http-status-error-503-is-unavailable",
    ),
    _case(
        _httpx_tls_to_plain,
        httpx.ConnectError,
        "ERR_SSL_ERROR",
        _SSL_FAILED,
        id="httpx-connect-error-from-tls-failure-is-ssl-error",
    ),
    _case(
        _httpx_unresolvable,
        httpx.ConnectError,
        "ERR_DNS_FAILURE",
        _NETWORK,
        id="httpx-connect-error-from-unresolvable-host-is-dns-failure",
    ),
    _case(
        _httpx_cert_rejected,
        httpx.ConnectError,
        "ERR_SSL_CERTIFICATE",
        _NETWORK,
        id="httpx-connect-error-from-certificate-failure-is-ssl-certificate",
    ),
]


# --------------------------------------------------------------------------- requests / urllib3


def _requests_get(url: str, **kwargs: Any) -> Callable[[], object]:
    def get() -> object:
        with requests.Session() as session:
            return session.get(url, **kwargs)

    return get


def _requests_refused(net: Loopback) -> BaseException:
    return _raised(_requests_get(f"http://{_LOOPBACK}:{net.closed_port()}/", timeout=2))


def _requests_connect_timeout(net: Loopback) -> BaseException:
    url = f"http://{_LOOPBACK}:{net.unanswered_port()}/"
    return _raised(_requests_get(url, timeout=(_SHORT_TIMEOUT_S, 2)))


def _requests_read_timeout(net: Loopback) -> BaseException:
    server = net.serve(_never_answer)
    return _raised(_requests_get(server.url, timeout=(2, _SHORT_TIMEOUT_S)))


def _requests_tls_to_plain(net: Loopback) -> BaseException:
    return _raised(_requests_get(net.serve(_plain_http_to_tls).https_url, timeout=2))


def _requests_truncated_body(net: Loopback) -> BaseException:
    return _raised(_requests_get(net.serve(_truncated_chunked_body).url, timeout=2))


def _requests_status(handler: Handler) -> Produce:
    def produce(net: Loopback) -> BaseException:
        url = net.serve(handler).url

        def get() -> None:
            with requests.Session() as session:
                session.get(url, timeout=2).raise_for_status()

        return _raised(get)

    return produce


def _requests_disconnected(net: Loopback) -> BaseException:
    return _raised(_requests_get(net.serve(_close_after_request).url, timeout=2))


def _requests_reset(net: Loopback) -> BaseException:
    return _raised(_requests_get(net.serve(_reset_after_request).url, timeout=2))


def _requests_unresolvable(net: Loopback) -> BaseException:
    net.forbid_name_resolution()
    return _raised(_requests_get("http://api.example.invalid/", timeout=2))


def _requests_proxy_refuses(net: Loopback) -> BaseException:
    proxy = net.serve(_PROXY_REFUSES)
    target = f"https://{_LOOPBACK}:{net.closed_port()}/"
    return _raised(_requests_get(target, proxies={"https": proxy.url}, timeout=2))


def _requests_cert_rejected(net: Loopback) -> BaseException:
    # How requests reports a certificate failure: its SSLError wraps urllib3's
    # MaxRetryError, whose reason is urllib3's SSLError around the ssl module's error.
    pool = urllib3.HTTPSConnectionPool("api.example.invalid", 443)
    reason = urllib3.exceptions.SSLError(_cert_verify_error())
    return requests.exceptions.SSLError(urllib3.exceptions.MaxRetryError(pool, "/", reason))


def _urllib3_unresolvable(net: Loopback) -> BaseException:
    net.forbid_name_resolution()

    def get() -> object:
        with urllib3.PoolManager() as manager:
            return manager.request("GET", "http://api.example.invalid/", retries=False, timeout=2)

    return _raised(get)


def _urllib3_request(handler_or_port: Handler | None, *, retries: Any) -> Produce:
    def produce(net: Loopback) -> BaseException:
        if handler_or_port is None:
            url = f"http://{_LOOPBACK}:{net.closed_port()}/"
        else:
            url = net.serve(handler_or_port).url

        def get() -> object:
            with urllib3.PoolManager() as manager:
                return manager.request("GET", url, retries=retries, timeout=2)

        return _raised(get)

    return produce


REQUESTS_CASES = [
    _case(
        _requests_refused,
        requests.ConnectionError,
        "ERR_CONNECTION_REFUSED",
        _NETWORK,
        id="requests-connection-error-from-refused-port-is-connection-refused",
    ),
    _case(
        _requests_connect_timeout,
        requests.ConnectTimeout,
        "ERR_CONNECT_TIMEOUT",
        _TIMED_OUT,
        id="requests-connect-timeout-is-connect-timeout",
    ),
    _case(
        _requests_read_timeout,
        requests.ReadTimeout,
        "ERR_READ_TIMEOUT",
        _TIMED_OUT,
        id="requests-read-timeout-is-read-timeout",
    ),
    _case(
        _requests_tls_to_plain,
        requests.exceptions.SSLError,
        "ERR_SSL_ERROR",
        _SSL_FAILED,
        id="requests-ssl-error-is-ssl-error",
    ),
    _case(
        _requests_cert_rejected,
        requests.exceptions.SSLError,
        "ERR_SSL_CERTIFICATE",
        _NETWORK,
        id="requests-ssl-error-from-certificate-failure-is-ssl-certificate",
    ),
    _case(
        _requests_truncated_body,
        requests.exceptions.ChunkedEncodingError,
        "ERR_CONNECTION_CLOSED",
        _NETWORK,
        id="requests-chunked-encoding-error-is-connection-closed",
    ),
    _case(
        _requests_status(_RATE_LIMITED),
        requests.HTTPError,
        "ERR_HTTP_429_RATE_LIMITED",
        _RATE_LIMIT,
        id="requests-http-error-429-is-rate-limited",
    ),
    _case(
        _requests_status(_UNAVAILABLE),
        requests.HTTPError,
        "ERR_HTTP_503_UNAVAILABLE",
        _SERVER_ERROR,
        id="requests-http-error-503-is-unavailable",
    ),
    _case(
        _requests_disconnected,
        requests.ConnectionError,
        "ERR_CONNECTION_CLOSED",
        _NETWORK,
        id="requests-connection-error-on-hang-up-is-connection-closed",
    ),
    _case(
        _requests_reset,
        requests.ConnectionError,
        "ERR_CONNECTION_RESET",
        _NETWORK,
        id="requests-connection-error-from-peer-rst-is-connection-reset",
    ),
    _case(
        _requests_unresolvable,
        requests.ConnectionError,
        "ERR_DNS_FAILURE",
        _NETWORK,
        id="requests-connection-error-from-unresolvable-host-is-dns-failure",
    ),
    _case(
        _requests_proxy_refuses,
        requests.exceptions.ProxyError,
        "ERR_PROXY_ERROR",
        _NETWORK,
        id="requests-proxy-error-is-proxy-error",
    ),
    _case(
        _urllib3_unresolvable,
        urllib3.exceptions.NameResolutionError,
        "ERR_DNS_FAILURE",
        _NETWORK,
        id="urllib3-name-resolution-error-is-dns-failure",
    ),
    _case(
        _urllib3_request(_close_after_request, retries=False),
        urllib3.exceptions.ProtocolError,
        "ERR_CONNECTION_CLOSED",
        _NETWORK,
        id="urllib3-protocol-error-on-hang-up-is-connection-closed",
    ),
    _case(
        _urllib3_request(None, retries=False),
        urllib3.exceptions.NewConnectionError,
        "ERR_CONNECTION_REFUSED",
        _NETWORK,
        id="urllib3-new-connection-error-from-refused-port-is-connection-refused",
    ),
    _case(
        _urllib3_request(None, retries=0),
        urllib3.exceptions.MaxRetryError,
        "ERR_CONNECTION_REFUSED",
        _NETWORK,
        id="urllib3-max-retry-error-from-refused-port-is-connection-refused",
    ),
]


def test_requests_connect_timeout_is_a_timeout_although_it_is_a_connection_error(
    loopback: Loopback,
) -> None:
    exc = _requests_connect_timeout(loopback)
    assert isinstance(exc, requests.ConnectionError)
    assert isinstance(exc, requests.Timeout)
    failure = classify(exc)
    assert failure.kind is FailureKind.TIMEOUT
    assert failure.code == "ERR_CONNECT_TIMEOUT"


# --------------------------------------------------------------------------- aiohttp


def _aiohttp_get(url: str, **session_kwargs: Any) -> Callable[[], object]:
    async def get() -> None:
        async with aiohttp.ClientSession(**session_kwargs) as session, session.get(url) as resp:
            await resp.read()

    return lambda: _run(get)


class _NoResolver(AbstractResolver):
    """A resolver for which no name exists, as an unknown host gives."""

    async def resolve(self, host: str, port: int = 0, family: Any = socket.AF_INET) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    async def close(self) -> None:
        return None


def _aiohttp_refused(net: Loopback) -> BaseException:
    return _raised(_aiohttp_get(f"http://{_LOOPBACK}:{net.closed_port()}/"))


def _aiohttp_unresolvable(net: Loopback) -> BaseException:
    async def get() -> None:
        connector = aiohttp.TCPConnector(resolver=_NoResolver())
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            session.get("http://api.example.invalid/") as resp,
        ):
            await resp.read()

    return _raised(lambda: _run(get))


def _aiohttp_disconnected(net: Loopback) -> BaseException:
    return _raised(_aiohttp_get(net.serve(_close_after_request).url))


def _aiohttp_sock_read_timeout(net: Loopback) -> BaseException:
    timeout = aiohttp.ClientTimeout(total=5, sock_read=_SHORT_TIMEOUT_S)
    return _raised(_aiohttp_get(net.serve(_never_answer).url, timeout=timeout))


def _aiohttp_total_timeout(net: Loopback) -> BaseException:
    timeout = aiohttp.ClientTimeout(total=_SHORT_TIMEOUT_S)
    return _raised(_aiohttp_get(net.serve(_never_answer).url, timeout=timeout))


def _aiohttp_connect_timeout(net: Loopback) -> BaseException:
    url = f"http://{_LOOPBACK}:{net.unanswered_port()}/"
    timeout = aiohttp.ClientTimeout(total=5, sock_connect=_SHORT_TIMEOUT_S)
    return _raised(_aiohttp_get(url, timeout=timeout))


def _aiohttp_status(handler: Handler) -> Produce:
    def produce(net: Loopback) -> BaseException:
        return _raised(_aiohttp_get(net.serve(handler).url, raise_for_status=True))

    return produce


def _aiohttp_truncated_body(net: Loopback) -> BaseException:
    return _raised(_aiohttp_get(net.serve(_truncated_chunked_body).url))


def _aiohttp_tls_to_plain(net: Loopback) -> BaseException:
    return _raised(_aiohttp_get(net.serve(_plain_http_to_tls).https_url))


def _aiohttp_connection_key() -> Any:
    fields = {
        "host": "api.example.invalid",
        "port": 443,
        "is_ssl": True,
        "ssl": True,
        "proxy": None,
        "proxy_auth": None,
        "proxy_headers_hash": None,
        "server_hostname": None,
    }
    return ConnectionKey(**{k: v for k, v in fields.items() if k in ConnectionKey._fields})


def _aiohttp_cert_rejected(net: Loopback) -> BaseException:
    cert_error = _cert_verify_error()
    outer = aiohttp.ClientConnectorCertificateError(_aiohttp_connection_key(), cert_error)
    return _raise_from(outer, cert_error)


AIOHTTP_CASES = [
    _case(
        _aiohttp_refused,
        aiohttp.ClientConnectorError,
        "ERR_CONNECTION_REFUSED",
        _NETWORK,
        id="aiohttp-client-connector-error-from-refused-port-is-connection-refused",
    ),
    _case(
        _aiohttp_unresolvable,
        aiohttp.ClientConnectorDNSError,
        "ERR_DNS_FAILURE",
        _NETWORK,
        id="aiohttp-client-connector-dns-error-is-dns-failure",
    ),
    _case(
        _aiohttp_disconnected,
        aiohttp.ServerDisconnectedError,
        "ERR_CONNECTION_CLOSED",
        _NETWORK,
        id="aiohttp-server-disconnected-is-connection-closed",
    ),
    _case(
        _aiohttp_sock_read_timeout,
        aiohttp.SocketTimeoutError,
        "ERR_READ_TIMEOUT",
        _TIMED_OUT,
        id="aiohttp-socket-timeout-error-is-read-timeout",
    ),
    _case(
        _aiohttp_connect_timeout,
        aiohttp.ConnectionTimeoutError,
        "ERR_CONNECT_TIMEOUT",
        _TIMED_OUT,
        id="aiohttp-connection-timeout-error-is-connect-timeout",
    ),
    _case(
        lambda net: aiohttp.ServerTimeoutError("Timeout on reading data from socket"),
        aiohttp.ServerTimeoutError,
        "ERR_TIMEOUT",
        _TIMED_OUT,
        id="aiohttp-server-timeout-error-is-timeout",
    ),
    _case(
        _aiohttp_total_timeout,
        TimeoutError,
        "ERR_TIMEOUT",
        _TIMED_OUT,
        id="aiohttp-total-timeout-is-timeout",
    ),
    _case(
        _aiohttp_status(_RATE_LIMITED),
        aiohttp.ClientResponseError,
        "ERR_HTTP_429_RATE_LIMITED",
        _RATE_LIMIT,
        id="aiohttp-client-response-error-429-is-rate-limited",
    ),
    _case(
        _aiohttp_status(_INTERNAL),
        aiohttp.ClientResponseError,
        "ERR_HTTP_500_INTERNAL",
        _SERVER_ERROR,
        id="aiohttp-client-response-error-500-is-internal",
    ),
    _case(
        _aiohttp_truncated_body,
        aiohttp.ClientPayloadError,
        "ERR_CONNECTION_CLOSED",
        _NETWORK,
        id="aiohttp-client-payload-error-is-connection-closed",
    ),
    _case(
        _aiohttp_tls_to_plain,
        aiohttp.ClientConnectorSSLError,
        "ERR_SSL_ERROR",
        _SSL_FAILED,
        id="aiohttp-client-connector-ssl-error-is-ssl-error",
    ),
    _case(
        _aiohttp_cert_rejected,
        aiohttp.ClientConnectorCertificateError,
        "ERR_SSL_CERTIFICATE",
        _NETWORK,
        id="aiohttp-client-connector-certificate-error-is-ssl-certificate",
    ),
    _case(
        lambda net: aiohttp.ClientOSError(errno.ENETUNREACH, "Network is unreachable"),
        aiohttp.ClientOSError,
        "ERR_NETWORK_UNREACHABLE",
        _NETWORK,
        id="aiohttp-client-os-error-with-enetunreach-is-network-unreachable",
    ),
]


# --------------------------------------------------------------------------- SDKs

_MESSAGES = [{"role": "user", "content": "hi"}]


def _anthropic_call(base_url: str, timeout: float = 2.0) -> Callable[[], object]:
    def call() -> object:
        with anthropic.Anthropic(
            api_key="test-key", base_url=base_url, max_retries=0, timeout=timeout
        ) as client:
            return client.messages.create(model="claude-test", max_tokens=1, messages=_MESSAGES)

    return call


def _openai_call(base_url: str, timeout: float = 2.0) -> Callable[[], object]:
    def call() -> object:
        with openai.OpenAI(
            api_key="test-key", base_url=base_url, max_retries=0, timeout=timeout
        ) as client:
            return client.chat.completions.create(model="gpt-test", messages=_MESSAGES)

    return call


def _sdk_refused(call: Callable[[str], Callable[[], object]]) -> Produce:
    return lambda net: _raised(call(f"http://{_LOOPBACK}:{net.closed_port()}"))


def _sdk_read_timeout(call: Callable[..., Callable[[], object]]) -> Produce:
    return lambda net: _raised(call(net.serve(_never_answer).url, timeout=_SHORT_TIMEOUT_S))


def _sdk_connect_timeout(call: Callable[..., Callable[[], object]]) -> Produce:
    def produce(net: Loopback) -> BaseException:
        url = f"http://{_LOOPBACK}:{net.unanswered_port()}"
        return _raised(call(url, timeout=_SHORT_TIMEOUT_S))

    return produce


def _sdk_answer(call: Callable[[str], Callable[[], object]], handler: Handler) -> Produce:
    return lambda net: _raised(call(net.serve(handler).url))


def _bare_timeout(cls: Any) -> Produce:
    return lambda net: cls(request=httpx.Request("POST", f"http://{_LOOPBACK}/v1/messages"))


SDK_CASES = [
    _case(
        _sdk_refused(_anthropic_call),
        anthropic.APIConnectionError,
        "ERR_CONNECTION_REFUSED",
        _NETWORK,
        id="anthropic-api-connection-error-from-refused-port-is-connection-refused",
    ),
    _case(
        _sdk_refused(_openai_call),
        openai.APIConnectionError,
        "ERR_CONNECTION_REFUSED",
        _NETWORK,
        id="openai-api-connection-error-from-refused-port-is-connection-refused",
    ),
    _case(
        _sdk_read_timeout(_anthropic_call),
        anthropic.APITimeoutError,
        "ERR_READ_TIMEOUT",
        _TIMED_OUT,
        id="anthropic-api-timeout-error-from-read-timeout-is-read-timeout",
    ),
    _case(
        _sdk_read_timeout(_openai_call),
        openai.APITimeoutError,
        "ERR_READ_TIMEOUT",
        _TIMED_OUT,
        id="openai-api-timeout-error-from-read-timeout-is-read-timeout",
    ),
    _case(
        _sdk_connect_timeout(_anthropic_call),
        anthropic.APITimeoutError,
        "ERR_CONNECT_TIMEOUT",
        _TIMED_OUT,
        id="anthropic-api-timeout-error-from-connect-timeout-is-connect-timeout",
    ),
    _case(
        _bare_timeout(anthropic.APITimeoutError),
        anthropic.APITimeoutError,
        "ERR_TIMEOUT",
        _TIMED_OUT,
        id="anthropic-api-timeout-error-without-cause-is-timeout",
    ),
    _case(
        _bare_timeout(openai.APITimeoutError),
        openai.APITimeoutError,
        "ERR_TIMEOUT",
        _TIMED_OUT,
        id="openai-api-timeout-error-without-cause-is-timeout",
    ),
    _case(
        _sdk_answer(_anthropic_call, _RATE_LIMITED),
        anthropic.RateLimitError,
        "ERR_HTTP_429_RATE_LIMITED",
        _RATE_LIMIT,
        id="anthropic-rate-limit-error-is-rate-limited",
    ),
    _case(
        _sdk_answer(_openai_call, _RATE_LIMITED),
        openai.RateLimitError,
        "ERR_HTTP_429_RATE_LIMITED",
        _RATE_LIMIT,
        id="openai-rate-limit-error-is-rate-limited",
    ),
    _case(
        _sdk_answer(_anthropic_call, _OVERLOADED),
        anthropic.APIStatusError,
        "ERR_HTTP_529_OVERLOADED",
        _SERVER_ERROR,
        id="anthropic-529-overloaded-is-overloaded",
    ),
]


@pytest.mark.parametrize("sdk", [anthropic, openai], ids=["anthropic", "openai"])
def test_sdk_api_timeout_error_is_a_timeout_although_it_is_a_connection_error(sdk: Any) -> None:
    assert issubclass(sdk.APITimeoutError, sdk.APIConnectionError)
    request = httpx.Request("POST", f"http://{_LOOPBACK}/v1/messages")
    failure = classify(sdk.APITimeoutError(request=request))
    assert failure.kind is FailureKind.TIMEOUT
    assert failure.retryable is True


@pytest.mark.parametrize(
    ("produce", "provider"),
    [
        pytest.param(_sdk_refused(_anthropic_call), "anthropic", id="anthropic-connection"),
        pytest.param(_sdk_refused(_openai_call), "openai", id="openai-connection"),
        pytest.param(_sdk_answer(_anthropic_call, _RATE_LIMITED), "anthropic", id="anthropic-429"),
        pytest.param(_sdk_answer(_openai_call, _RATE_LIMITED), "openai", id="openai-429"),
    ],
)
def test_sdk_failure_names_the_sdk_provider(
    loopback: Loopback, produce: Produce, provider: str
) -> None:
    assert classify(produce(loopback)).provider == provider


# --------------------------------------------------------------------------- every library

_TABLES = (BUILTIN_CASES, HTTPX_CASES, REQUESTS_CASES, AIOHTTP_CASES, SDK_CASES)


@pytest.mark.parametrize(_CASE_ARGS, [case for table in _TABLES for case in table])
def test_failure_classifies_to_its_code(
    loopback: Loopback,
    produce: Produce,
    raises: type[BaseException],
    expected: Expected,
) -> None:
    _check(produce(loopback), raises, expected)


@pytest.mark.parametrize(
    "produce",
    [
        pytest.param(_httpx_status(_RATE_LIMITED), id="httpx"),
        pytest.param(_requests_status(_RATE_LIMITED), id="requests"),
        pytest.param(_aiohttp_status(_RATE_LIMITED), id="aiohttp"),
        pytest.param(_sdk_answer(_anthropic_call, _RATE_LIMITED), id="anthropic"),
        pytest.param(_sdk_answer(_openai_call, _RATE_LIMITED), id="openai"),
    ],
)
def test_rate_limited_response_error_carries_the_retry_after_header(
    loopback: Loopback, produce: Produce
) -> None:
    failure = classify(produce(loopback))
    assert failure.kind is FailureKind.RATE_LIMIT
    assert failure.retry_after_s == 7.0
    assert failure.status == 429


def test_transport_failure_records_the_exception_class(loopback: Loopback) -> None:
    failure = classify(_httpx_refused(loopback))
    assert failure.details["exception"] == "httpx.ConnectError"


def test_every_expected_code_in_these_tables_is_registered() -> None:
    for table in _TABLES:
        for case in table:
            _, _, (code, kind, retryable) = case.values
            assert CODES[code].kind is kind, case.id
            assert CODES[code].retryable is retryable, case.id


# --------------------------------------------------------------------------- real certificates


@pytest.fixture(scope="module")
def self_signed_tls(tmp_path_factory: pytest.TempPathFactory) -> ssl.SSLContext:
    """A server context with a fresh self-signed certificate for 127.0.0.1."""
    x509 = pytest.importorskip("cryptography.x509")
    hashes = pytest.importorskip("cryptography.hazmat.primitives.hashes")
    serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")
    ec = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ec")
    name_oid = pytest.importorskip("cryptography.x509.oid").NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(name_oid.COMMON_NAME, "backstay test server")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(_LOOPBACK))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    folder: Path = tmp_path_factory.mktemp("tls")
    cert_file = folder / "cert.pem"
    key_file = folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return context


def _ssl_untrusted(url: str) -> Callable[[], object]:
    host, _, port = url.removeprefix("https://").partition(":")

    def handshake() -> None:
        context = ssl.create_default_context()
        with (
            socket.create_connection((host, int(port)), timeout=2) as sock,
            context.wrap_socket(sock, server_hostname=host),
        ):
            return

    return handshake


@pytest.mark.parametrize(
    ("client", "raises"),
    [
        pytest.param(_ssl_untrusted, ssl.SSLCertVerificationError, id="ssl-module"),
        pytest.param(lambda url: _httpx_get(url, timeout=2), httpx.ConnectError, id="httpx"),
        pytest.param(
            lambda url: _requests_get(url, timeout=2), requests.exceptions.SSLError, id="requests"
        ),
        pytest.param(_aiohttp_get, aiohttp.ClientConnectorCertificateError, id="aiohttp"),
    ],
)
def test_untrusted_server_certificate_is_ssl_certificate(
    loopback: Loopback,
    self_signed_tls: ssl.SSLContext,
    client: Callable[[str], Callable[[], object]],
    raises: type[BaseException],
) -> None:
    server = loopback.serve(_never_answer, tls=self_signed_tls)
    exc = _raised(client(server.https_url))
    _check(exc, raises, ("ERR_SSL_CERTIFICATE", *_NETWORK))
