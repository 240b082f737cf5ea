"""``Gateway``: the server as an object you start and stop.

Synchronously (``with Gateway(settings) as gw:``) it serves from a background thread with
its own event loop; asynchronously (``async with Gateway(settings) as gw:``) in the running
loop. Either way ``url`` is the base URL clients are pointed at. ``limiters``: the rate
limiters its requests are paced at (``backstay.gateway.limits``), e.g. a store's, shared
with other processes. ``spending``: the spending budget of its requests that are not of a
run (``backstay.gateway.spending``).
"""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType
from typing import TYPE_CHECKING, Final

from backstay._served import ServedOnAThread
from backstay.breaker import BreakerRegistry
from backstay.errors import ConfigError
from backstay.gateway._aiohttp import require
from backstay.gateway.http1 import Http1, Http1Connections
from backstay.gateway.limits import GatewayLimits
from backstay.gateway.runs import RunTokens
from backstay.gateway.settings import GatewaySettings
from backstay.gateway.spending import HeldRequests
from backstay.gateway.upstream import close_own_connections
from backstay.policy.protocols import LimiterRegistryLike

if TYPE_CHECKING:
    import aiohttp
    from aiohttp import web

    from backstay.gateway.proxy import Proxy

__all__ = ["Gateway"]

# How long stopping waits for answers still being written before cutting them.
_SHUTDOWN_GRACE_S: Final = 1.0
# Connections waiting to be accepted (aiohttp's default).
_BACKLOG: Final = 128


class Gateway(ServedOnAThread):
    """A gateway serving ``settings`` (port 0 picks a free port). ``breakers`` holds the
    circuit breaker of every (provider, model) it has seen (a fresh in-memory registry from
    the settings' ``breaker`` when not given). With ``runs`` (``backstay.gateway.runs``)
    it serves only requests whose API key is a live run token; ``tracer_provider``: where
    each request's span goes (default: OpenTelemetry's global provider); ``spending``: the
    budget its requests that are not of a run are held to (``GatewaySpending``)."""

    _label = "the gateway"

    def __init__(
        self,
        settings: GatewaySettings | None = None,
        *,
        breakers: BreakerRegistry | None = None,
        limiters: LimiterRegistryLike | None = None,
        runs: RunTokens | None = None,
        tracer_provider: object = None,
        spending: HeldRequests | None = None,
    ) -> None:
        if settings is not None and not isinstance(settings, GatewaySettings):
            raise ConfigError(f"must be GatewaySettings, got {settings!r}", where="settings")
        self.settings = settings if settings is not None else GatewaySettings()
        self.breakers = (
            breakers if breakers is not None else BreakerRegistry(settings=self.settings.breaker)
        )
        # The rate limiters it paces requests at (an in-process registry when not given).
        self.limits = GatewayLimits(limiters)
        self.runs = runs
        if spending is not None and not isinstance(spending, HeldRequests):
            raise ConfigError(f"must be HeldRequests, got {spending!r}", where="spending")
        self.spending = spending
        self._tracer_provider = tracer_provider
        self._port = self.settings.port
        self._runner: web.AppRunner | None = None
        self._server: asyncio.Server | None = None
        self._connections = Http1Connections()
        self._proxy: Proxy | None = None
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port it listens on (the chosen one, once started)."""
        return self._port

    @property
    def url(self) -> str:
        """``http://HOST:PORT``, without a path."""
        if self._runner is None:
            raise RuntimeError("the gateway is not running")
        host = self.settings.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self._port}"

    @property
    def running(self) -> bool:
        return self._runner is not None

    @property
    def active_requests(self) -> int:
        """Client requests being answered now (retries and waits included)."""
        return 0 if self._proxy is None else self._proxy.active

    # ---- in the running loop ---------------------------------------------------------

    async def astart(self) -> Gateway:
        """Start serving in the running event loop."""
        if self._runner is not None:
            raise RuntimeError("the gateway is already running")
        require()
        import aiohttp  # noqa: PLC0415 — an optional dependency, loaded on use
        from aiohttp import web  # noqa: PLC0415

        from backstay.gateway.proxy import Proxy  # noqa: PLC0415

        settings = self.settings
        session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(
                total=None, connect=settings.connect_timeout_s, sock_read=settings.read_timeout_s
            ),
            connector=aiohttp.TCPConnector(limit=0),
            auto_decompress=True,
            # One session serves every client: an upstream's cookies are not kept, never
            # sent with another client's request (and none is looked up per request).
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        proxy = Proxy(
            settings,
            session,
            self.breakers,
            runs=self.runs,
            tracer_provider=self._tracer_provider,
            limits=self.limits,
            spending=self.spending,
        )
        app = web.Application(client_max_size=settings.max_request_bytes)
        if self.runs is not None:  # runs opened over HTTP (a shared gateway's)
            from backstay.gateway.run_admin import add_run_routes  # noqa: PLC0415

            add_run_routes(app, self.runs, settings)
        app.router.add_route("*", "/{tail:.*}", proxy.handle)
        # aiohttp's server serves the connections the gateway's own (``http1``) hands it.
        # Handler cancellation: a client that hangs up ends its request's retries at once.
        runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=_SHUTDOWN_GRACE_S,
            handler_cancellation=True,
        )
        await runner.setup()
        connections = Http1Connections()
        aiohttp_server = runner.server
        if aiohttp_server is None:  # set up just above
            raise RuntimeError("aiohttp's server was not set up")

        def handoff(transport: asyncio.Transport, data: bytes) -> None:
            handler = aiohttp_server()
            transport.set_protocol(handler)
            handler.connection_made(transport)
            if data:
                handler.data_received(data)

        def connection() -> Http1:
            return Http1(proxy.respond, handoff, settings.max_request_bytes, connections)

        try:
            server = await asyncio.get_running_loop().create_server(
                connection, settings.host, self._port, backlog=_BACKLOG
            )
        except OSError as err:
            await runner.cleanup()
            await session.close()
            raise ConfigError(
                f"cannot listen on {settings.host}:{self._port}: {err.strerror or err}",
                where="port",
            ) from None
        self._port = int(server.sockets[0].getsockname()[1])
        self._server, self._connections = server, connections
        self._runner, self._session, self._proxy = runner, session, proxy
        return self

    async def astop(self) -> None:
        """Stop serving and close the upstream connections. Stopping a stopped gateway
        does nothing."""
        runner, session, server = self._runner, self._session, self._server
        if runner is None or session is None or server is None:
            return
        try:
            server.close()
            await self._connections.close(_SHUTDOWN_GRACE_S)
            await runner.cleanup()
        finally:
            try:
                await close_own_connections(session)  # the upstream connections of its own
            finally:
                await session.close()
            self._runner = self._session = self._proxy = self._server = None

    async def __aenter__(self) -> Gateway:
        return await self.astart()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.astop()

    @property
    def _serving(self) -> bool:
        return self._runner is not None

    def __repr__(self) -> str:
        where = self.url if self._runner is not None else "stopped"
        return f"Gateway({where})"
