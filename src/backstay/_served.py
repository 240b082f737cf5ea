"""``ServedOnAThread``: a server written for the running event loop (``astart`` /
``astop``, ``async with``) that can also serve from a background thread with an event
loop of its own (``start`` / ``stop``, ``with``). The fake provider and the gateway are
both; this is the thread half, written once."""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType
from typing import ClassVar, Final, Self

__all__ = ["ServedOnAThread"]

_START_TIMEOUT_S: Final = 30.0
_STOP_TIMEOUT_S: Final = 30.0


class ServedOnAThread:
    """The thread half of a server. A subclass sets ``_label`` (``"the gateway"``), gives
    ``astart`` (returning itself), ``astop`` and ``_serving``, and sets ``_loop`` and
    ``_thread`` to ``None`` in its ``__init__``."""

    _label: ClassVar[str]
    _loop: asyncio.AbstractEventLoop | None
    _thread: threading.Thread | None

    async def astart(self) -> Self:
        raise NotImplementedError

    async def astop(self) -> None:
        raise NotImplementedError

    @property
    def _serving(self) -> bool:
        raise NotImplementedError

    def start(self) -> Self:
        """Start serving from a background thread with its own event loop."""
        if self._serving:
            raise RuntimeError(f"{self._label} is already running")
        loop = asyncio.new_event_loop()
        name = "backstay-" + self._label.removeprefix("the ").replace(" ", "-")
        thread = threading.Thread(target=loop.run_forever, name=name, daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.astart(), loop).result(_START_TIMEOUT_S)
        except BaseException:
            _end_loop(loop, thread)
            raise
        self._loop, self._thread = loop, thread
        return self

    def stop(self) -> None:
        """Stop serving and end the background thread (or, if started with ``astart``,
        nothing: use ``astop``)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.astop(), loop).result(_STOP_TIMEOUT_S)
        finally:
            self._loop = self._thread = None
            _end_loop(loop, thread)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _end_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join(_STOP_TIMEOUT_S)
    if not thread.is_alive():
        # As asyncio.run does: what waits for the loop's end (a store's connection) ends on it.
        loop.run_until_complete(asyncio.wait_for(loop.shutdown_asyncgens(), _STOP_TIMEOUT_S))
        loop.close()
