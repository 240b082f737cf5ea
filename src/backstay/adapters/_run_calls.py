"""Calls to a gateway that block, made off the event loop (``gateway_wiring.aopen_run``,
``OpenedRun.aclose``): a gateway whose ``open_run`` and ``close_run`` wait on the network
says so with a true ``calls_block`` (a shared gateway's HTTP calls), and each such call is
made on a worker thread of a pool of its own (``RUN_CALL_THREADS`` at most at once; more
wait for a thread, never on the loop), in a copy of the caller's context. The pool is
apart from the loop's default executor, so that a slow gateway takes no thread another
part of the engine waits for."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

__all__ = ["RUN_CALL_THREADS", "blocks", "close_late", "off_loop", "submit"]

# The most calls to gateways whose calls block made at once.
RUN_CALL_THREADS: Final = 32
THREAD_PREFIX: Final = "backstay-run-call"

T = TypeVar("T")

_THREADS: concurrent.futures.ThreadPoolExecutor | None = None
_THREADS_LOCK: Final = threading.Lock()


def blocks(gateway: object) -> bool:
    """Whether ``gateway``'s calls wait on the network (its ``calls_block``; absent: no)."""
    return getattr(gateway, "calls_block", False) is True


def submit(call: Callable[[], T]) -> concurrent.futures.Future[T]:
    """``call`` on a worker thread of the pool, in a copy of this context."""
    global _THREADS  # noqa: PLW0603 - one pool for the process, made when first needed
    with _THREADS_LOCK:
        if _THREADS is None:
            _THREADS = concurrent.futures.ThreadPoolExecutor(
                max_workers=RUN_CALL_THREADS, thread_name_prefix=THREAD_PREFIX
            )
        threads = _THREADS
    return threads.submit(contextvars.copy_context().run, call)


async def off_loop(gateway: object, call: Callable[[], T]) -> T:
    """``call`` (of ``gateway``): on a worker thread when ``gateway``'s calls block, else
    here. A cancelled wait leaves the call to finish on its thread."""
    if not blocks(gateway):
        return call()
    return await asyncio.wrap_future(submit(call))


def close_late(gateway: Any, opened: concurrent.futures.Future[str]) -> None:
    """Close the run ``opened`` gave a token for (its attempt was cancelled while it was
    being opened); called on the worker thread that opened it, once it has."""
    if opened.cancelled() or opened.exception() is not None:
        return
    with contextlib.suppress(Exception):  # the attempt is gone: nobody to tell
        gateway.close_run(opened.result())
