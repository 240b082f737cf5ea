"""``MetricsServer``: ``/metrics``, ``/healthz`` and ``/readyz`` of a batch over HTTP, from a
thread of this process (``backstay serve``, ``backstay batch --serve-port``).

* ``/metrics``: ``render_metrics`` of a fresh snapshot (Prometheus text format);
* ``/healthz`` (``/livez``): liveness, ``pass`` while the process serves;
* ``/readyz``: ``health_check`` (503 on ``fail``), ``application/health+json``.

The batch is read from its state directory (SQLite), or from the shared store of
``location`` when that is a Redis one.

One thread runs an event loop that holds every connection; two more read the state. A
connection that has not sent its whole request within ``request_timeout_s`` is closed, and
so is one that does not take its answer within that time; beyond ``max_connections`` open
at once a new one is answered 503 and closed. So idle or slow clients cost a socket each
for a few seconds, never a thread. With a ``token``, every request must carry
``Authorization: Bearer <token>`` (401 otherwise); the token is never shown.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import hmac
import ipaddress
import json
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

from backstay.errors import ConfigError
from backstay.observe._http import MAX_LINE_BYTES, BadRequest, Request, read_request, response
from backstay.observe.health import (
    FAIL,
    HEALTH_CONTENT_TYPE,
    PASS,
    HealthReport,
    check_writable,
    health_of,
    liveness,
)
from backstay.observe.live import LiveCounters
from backstay.observe.prometheus import CONTENT_TYPE, render_metrics
from backstay.observe.snapshot import StateReader
from backstay.store.location import StoreKind, StoreLocation, StoreUnavailable, StoreUnreachable

__all__ = [
    "DEFAULT_HOST",
    "MAX_CONNECTIONS",
    "REQUEST_TIMEOUT_S",
    "TOKEN_ENV_VAR",
    "MetricsServer",
    "loopback_only",
]

DEFAULT_HOST: Final = "127.0.0.1"
# A client must send its whole request, and take its whole answer, within this.
REQUEST_TIMEOUT_S: Final = 5.0
# Connections open at once; a new one beyond is answered 503 and closed.
MAX_CONNECTIONS: Final = 256
# The variable ``backstay serve`` and ``--serve-port`` read the bearer token from.
TOKEN_ENV_VAR: Final = "BACKSTAY_SERVE_TOKEN"  # noqa: S105 - a variable's name, not a token
# Threads reading the state: a /readyz waiting on a locked state file leaves /metrics one.
_READERS: Final = 2
# How long close() waits for the serving thread and the readers.
_CLOSE_TIMEOUT_S: Final = 10.0
_TEXT: Final = "text/plain; charset=utf-8"
_ROUTES: Final = "/metrics, /healthz, /readyz"


@dataclasses.dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    body: bytes
    content_type: str = _TEXT
    headers: tuple[tuple[str, str], ...] = ()


class MetricsServer:
    """Serves the batch of ``state_dir`` (or of ``location``) on ``host:port`` (0: any free
    port; ``url`` says which) from a daemon thread once started; ``live`` adds this
    process's own counts. ``require_batch``: a Redis ``location`` must already hold a
    batch (``ConfigError`` otherwise); a batch being started passes False."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        *,
        host: str = DEFAULT_HOST,
        port: int = 0,
        live: LiveCounters | None = None,
        location: StoreLocation | None = None,
        token: str | None = None,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        require_batch: bool = True,
    ) -> None:
        if token is not None and not token.strip():
            raise ConfigError("the bearer token is empty", where="token")
        if not request_timeout_s > 0:
            raise ConfigError(f"must be > 0, got {request_timeout_s}", where="request_timeout_s")
        if max_connections < 1:
            raise ConfigError(f"must be at least 1, got {max_connections}", where="max_connections")
        self.live = live
        self._token = None if token is None else token.encode()
        self._timeout_s = request_timeout_s
        self._max_connections = max_connections
        self._shared = location if location is not None and location.shared else None
        if location is not None and location.kind is StoreKind.SQLITE and location.path:
            state_dir = location.path
        self.state_dir = Path(state_dir)
        if self._shared is not None:
            # A scrape answers (503 or 500) when Redis does not, rather than waiting for it.
            self._shared = dataclasses.replace(self._shared, unavailable=StoreUnavailable.STOP)
        self._reader = StateReader(
            self.state_dir, location=self._shared, require_batch=require_batch
        )
        try:
            self._sock = _listen(host, port)
        except BaseException:
            self._reader.close()
            raise
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._open: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        host, port = self._sock.getsockname()[:2]
        return f"http://{host!s}:{port}" if ":" not in host else f"http://[{host}]:{port}"

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    @property
    def connections(self) -> int:
        """Connections open now."""
        return len(self._open)

    def metrics(self) -> str:
        return render_metrics(self._reader.read(), self.live)

    def readiness(self) -> HealthReport:
        if self._shared is None:
            return health_of(self._reader.read(), store=check_writable(self.state_dir))
        where = self._shared.display
        try:
            snap = self._reader.read()
        except StoreUnreachable as err:
            check = {"status": FAIL, "componentId": where, "output": err.reason}
            return HealthReport(status=FAIL, checks={"store:reachable": (check,)})
        report = health_of(snap)
        store = {"status": PASS, "componentId": where, "time": snap.taken_at.isoformat()}
        return dataclasses.replace(report, checks={"store:reachable": (store,), **report.checks})

    def start(self) -> MetricsServer:
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=_READERS, thread_name_prefix="backstay-metrics-read"
        )
        self._thread = threading.Thread(target=self._run, name="backstay-metrics", daemon=True)
        self._thread.start()
        self._started.wait(_CLOSE_TIMEOUT_S)
        return self

    def close(self) -> None:
        if self._thread is not None:
            loop, stop = self._loop, self._stop
            if loop is not None and stop is not None and not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop ended on its own
                    loop.call_soon_threadsafe(stop.set)
            self._thread.join(_CLOSE_TIMEOUT_S)
            self._thread = None
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._sock.close()
        self._reader.close()

    def __enter__(self) -> MetricsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the serving thread -------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        finally:
            self._started.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._connection, sock=self._sock, limit=MAX_LINE_BYTES)
        self._started.set()
        try:
            await self._stop.wait()
        finally:
            server.close()
            for writer in list(self._open):
                writer.transport.abort()
            await asyncio.sleep(0)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        try:
            if len(self._open) > self._max_connections:
                busy = f"too many connections (over {self._max_connections}); try again\n"
                await self._reply(writer, _Answer(503, busy.encode()), head_only=False)
                return
            try:
                request = await read_request(reader, timeout_s=self._timeout_s)
            except BadRequest as bad:
                await self._reply(writer, _Answer(bad.status, f"{bad.reason}\n".encode()), False)
                return
            if request is None:
                return
            answer = await self._answer(request)
            await self._reply(writer, answer, head_only=request.method == "HEAD")
        except (ConnectionError, TimeoutError):
            pass
        finally:
            writer.close()
            try:
                async with asyncio.timeout(self._timeout_s):
                    await writer.wait_closed()
            except (TimeoutError, OSError):
                writer.transport.abort()
            finally:
                self._open.discard(writer)

    async def _reply(self, writer: asyncio.StreamWriter, answer: _Answer, head_only: bool) -> None:
        writer.write(
            response(
                answer.status,
                answer.body,
                content_type=answer.content_type,
                headers=dict(answer.headers),
                head_only=head_only,
            )
        )
        try:
            async with asyncio.timeout(self._timeout_s):
                await writer.drain()
        except TimeoutError:
            writer.transport.abort()

    async def _answer(self, request: Request) -> _Answer:
        if request.method not in ("GET", "HEAD"):
            return _Answer(405, b"only GET and HEAD\n", headers=(("Allow", "GET, HEAD"),))
        if self._token is not None and not _authorized(request, self._token):
            return _Answer(
                401,
                b"this server needs Authorization: Bearer <token>\n",
                headers=(("WWW-Authenticate", 'Bearer realm="backstay"'),),
            )
        if request.path == "/metrics":
            return await self._read(lambda: _Answer(200, self.metrics().encode(), CONTENT_TYPE))
        if request.path in ("/healthz", "/livez"):
            return _health(liveness())
        if request.path == "/readyz":
            return await self._read(lambda: _health(self.readiness()))
        return _Answer(404, f"not found: {_ROUTES}\n".encode())

    async def _read(self, make: Callable[[], _Answer]) -> _Answer:
        assert self._pool is not None  # noqa: S101 - started before serving
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, make)
        except Exception as exc:  # noqa: BLE001 - a broken read is a 500, not a dead server
            return _Answer(500, f"{type(exc).__name__}: {exc}\n".encode())


def _health(report: HealthReport) -> _Answer:
    body = json.dumps(report.to_dict(), indent=2).encode()
    return _Answer(report.http_status, body, HEALTH_CONTENT_TYPE)


def _authorized(request: Request, token: bytes) -> bool:
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token)


def loopback_only(host: str) -> bool:
    """True when every address ``host`` stands for is a loopback one (``127.0.0.1``,
    ``::1``, ``localhost``); False for ``0.0.0.0``, ``""``, any other address or a name
    that does not resolve."""
    try:
        found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False
    addresses = {str(info[4][0]).partition("%")[0] for info in found}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family, backlog=128)
    sock.setblocking(False)
    return sock
