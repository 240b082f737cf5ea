"""Answers remembered by ``Idempotency-Key``: the last ``MAX_KEYS`` successful answers.

A second request with a key still being worked on waits for the first to finish, then
gets its answer (or, if the first failed, is worked on itself).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Final

from backstay.fakeprovider._wire import Reply

MAX_KEYS: Final = 10_000


class Replays:
    """Key → answer. One event loop."""

    def __init__(self, max_keys: int = MAX_KEYS) -> None:
        self._max = max_keys
        self._done: OrderedDict[tuple[str, str], Reply] = OrderedDict()
        self._running: dict[tuple[str, str], asyncio.Event] = {}

    async def claim(self, key: tuple[str, str]) -> Reply | None:
        """The stored answer of ``key``, or ``None`` after marking it as being worked on
        (the caller must then ``release`` it)."""
        while True:
            stored = self._done.get(key)
            if stored is not None:
                self._done.move_to_end(key)
                return stored
            running = self._running.get(key)
            if running is None:
                self._running[key] = asyncio.Event()
                return None
            await running.wait()

    def release(self, key: tuple[str, str], reply: Reply | None) -> None:
        """End the work on ``key``, remembering ``reply`` if it is a success."""
        if reply is not None and reply.status == 200:
            self._done[key] = reply
            if len(self._done) > self._max:
                self._done.popitem(last=False)
        event = self._running.pop(key, None)
        if event is not None:
            event.set()
