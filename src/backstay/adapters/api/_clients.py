"""``shared_clients``: one SDK client per adapter, model, base URL and key, reused by every
attempt a batch makes, and closed when the batch ends.

An SDK client holds a connection pool: a client built for each attempt opens a new
connection (and closes it) every time, and builds its resources afresh. Inside
``async with shared_clients():`` (the engine opens one around the tasks it drives) an API
adapter takes its client from the pool, keyed by what the client is built from: the
adapter, the model, the base URL, the key (and where it came from: a bearer token is sent
differently) and the account (OpenAI's organization and project). What differs between
attempts goes with each request instead: the ``Idempotency-Key`` and trace headers
(``extra_headers``), the deadline (``timeout``), and the attempt's capture, which the
client's one response hook finds through a context variable (``attempt_capture``).

Outside a pool (one ``backstay run``, a library call) each attempt builds its client and
closes it when the attempt ends, as before. A pool belongs to the event loop it was
opened in; its clients are closed in that loop when the ``async with`` block ends.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from backstay.adapters.capture import Capture

__all__ = ["ClientPool", "attempt_capture", "current_pool", "record_rate_limits", "shared_clients"]

# The capture of the attempt running in this task (set by ``ApiAdapter.execute``).
attempt_capture: Final[contextvars.ContextVar[Capture | None]] = contextvars.ContextVar(
    "backstay_attempt_capture", default=None
)
# How a client is closed, when not by its own ``close()``.
Closer = Callable[[Any], Awaitable[None]]
_POOL: Final[contextvars.ContextVar[ClientPool | None]] = contextvars.ContextVar(
    "backstay_client_pool", default=None
)


async def record_rate_limits(response: Any) -> None:
    """The SDK clients' response hook: the answer's rate-limit headers recorded in the
    capture of the attempt that sent the request (for the engine's limiters)."""
    capture = attempt_capture.get()
    if capture is not None:
        capture.record_rate_limit_headers(response.headers)


class ClientPool:
    """The SDK clients of one ``shared_clients`` block, by key."""

    def __init__(self) -> None:
        self._clients: dict[Hashable, tuple[Any, Closer | None]] = {}
        self.built = 0  # how many clients this pool built (one per key)

    def client(self, key: Hashable, build: Callable[[], Any], close: Closer | None = None) -> Any:
        """The client for ``key``, built by ``build()`` the first time (and closed at the
        end by ``close(client)``, by default its own ``close()``)."""
        found = self._clients.get(key)
        if found is None:
            found = self._clients[key] = (build(), close)
            self.built += 1
        return found[0]

    async def aclose(self) -> None:
        """Close every client (their connections), once; the pool is empty after."""
        clients = list(self._clients.values())
        self._clients.clear()
        for client, close in clients:
            with contextlib.suppress(Exception):  # a connection already broken
                await (close(client) if close is not None else client.close())

    def __len__(self) -> int:
        return len(self._clients)


def current_pool() -> ClientPool | None:
    """The pool of the ``shared_clients`` block this task runs in, if any."""
    return _POOL.get()


@contextlib.asynccontextmanager
async def shared_clients() -> AsyncIterator[ClientPool]:
    """A pool of SDK clients for the attempts started in this block (and the tasks it
    creates), closed when it ends. Nested blocks share the outer pool."""
    outer = _POOL.get()
    if outer is not None:
        yield outer
        return
    pool = ClientPool()
    token = _POOL.set(pool)
    try:
        yield pool
    finally:
        _POOL.reset(token)
        await pool.aclose()


@contextlib.asynccontextmanager
async def attempt_client(
    key: Hashable, build: Callable[[], Any], close: Closer | None = None
) -> AsyncIterator[Any]:
    """The client for one attempt: the pool's for ``key`` inside ``shared_clients``, else
    one built now and closed when the attempt ends (``close(client)``, by default its own
    ``close()``)."""
    pool = _POOL.get()
    if pool is not None:
        yield pool.client(key, build, close)
        return
    client = build()
    try:
        yield client
    finally:
        await (close(client) if close is not None else client.close())
