"""``FakeProvider``: the server as an object you start and stop.

Synchronously (``with FakeProvider() as fake:``) it serves from a background thread with
its own event loop; asynchronously (``async with FakeProvider() as fake:``) it serves in
the running loop. Either way ``url`` is the base URL and ``stats()`` the counters so far.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Final

from backstay._checks import check_name, check_number
from backstay._served import ServedOnAThread
from backstay.errors import ConfigError
from backstay.fakeprovider._aiohttp import require
from backstay.fakeprovider.scenario import Scenario
from backstay.fakeprovider.stats import Stats

if TYPE_CHECKING:
    from aiohttp import web

    from backstay.fakeprovider._server import FakeServer

__all__ = ["FakeProvider"]

# How long stopping waits for answers still being written before cutting them.
_SHUTDOWN_GRACE_S: Final = 1.0


class FakeProvider(ServedOnAThread):
    """A fake Anthropic / OpenAI / Gemini server on ``host``:``port`` (0: a free port).

    ``scenario`` says what it answers and which faults it injects (``None``: plain
    answers); ``log_path`` names a JSON Lines request log to append to. Bad arguments, an
    unusable port or log file raise ``ConfigError``.
    """

    _label = "the fake provider"

    def __init__(
        self,
        scenario: Scenario | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if scenario is not None and not isinstance(scenario, Scenario):
            raise ConfigError(f"must be a Scenario, got {scenario!r}", where="scenario")
        check_name(host, where="host")
        check_number(port, where="port", maximum=65535, integer=True)
        self.scenario = scenario if scenario is not None else Scenario()
        self.host = host
        self._port = port
        self._log_path = None if log_path is None else Path(log_path)
        self._server: FakeServer | None = None
        self._runner: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # ---- what it serves --------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port it listens on (the chosen one, once started)."""
        return self._port

    @property
    def url(self) -> str:
        """``http://HOST:PORT``, without a path."""
        if self._server is None:
            raise RuntimeError("the fake provider is not running")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._port}"

    @property
    def running(self) -> bool:
        return self._server is not None

    def stats(self) -> Stats:
        """The counters so far (also after ``stop``)."""
        if self._server is None:
            return self._last_stats
        return self._server.recorder.snapshot()

    _last_stats: Stats = Stats()

    # ---- in the running loop ---------------------------------------------------------

    async def astart(self) -> FakeProvider:
        """Start serving in the running event loop."""
        if self._server is not None:
            raise RuntimeError("the fake provider is already running")
        require()
        from aiohttp import web  # noqa: PLC0415 — an optional dependency, loaded on use

        from backstay.fakeprovider._server import FakeServer  # noqa: PLC0415

        try:
            server = FakeServer(self.scenario, log_path=self._log_path)
        except OSError as err:
            raise ConfigError(
                f"cannot open the request log: {err.strerror or err}", where=str(self._log_path)
            ) from None
        runner = web.AppRunner(
            server.application(),
            access_log=None,
            handle_signals=False,
            shutdown_timeout=_SHUTDOWN_GRACE_S,
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._port)
        try:
            await site.start()
        except OSError as err:
            await runner.cleanup()
            server.recorder.close()
            raise ConfigError(
                f"cannot listen on {self.host}:{self._port}: {err.strerror or err}",
                where="port",
            ) from None
        self._port = int(runner.addresses[0][1])
        server.started()
        self._server, self._runner = server, runner
        return self

    async def astop(self) -> None:
        """Stop serving: held requests are released, open connections closed, the log
        flushed. Stopping a stopped provider does nothing."""
        server, runner = self._server, self._runner
        if server is None or runner is None:
            return
        try:
            await server.stopping()
            await runner.cleanup()
        finally:
            server.recorder.close()
            self._last_stats = server.recorder.snapshot()
            self._server = self._runner = None

    async def __aenter__(self) -> FakeProvider:
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
        return self._server is not None

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "stopped"
        return f"FakeProvider({where})"
