"""Answers remembered by ``Idempotency-Key``: the last ``MAX_KEYS`` successful answers.

A second request with a key still being worked on waits for the first to finish, then
gets its answer (or, if the first failed, is worked on itself). A key is bound to the
body of the request that first used it: the same key with another body is refused
(``KeyReused``), as providers refuse it, instead of answering a different question.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Final

from backstay.fakeprovider.wire.base import Reply

MAX_KEYS: Final = 10_000


class KeyReused(ValueError):
    """An ``Idempotency-Key`` came back with a different request body."""


class Replays:
    """Key → (body digest, answer). One event loop."""

    def __init__(self, max_keys: int = MAX_KEYS) -> None:
        self._max = max_keys
        self._done: OrderedDict[tuple[str, str], tuple[str, Reply]] = OrderedDict()
        self._running: dict[tuple[str, str], tuple[str, asyncio.Event]] = {}

    async def claim(self, key: tuple[str, str], digest: str) -> Reply | None:
        """The stored answer of ``key``, or ``None`` after marking it as being worked on
        (the caller must then ``release`` it). ``KeyReused`` when ``key`` belongs to a
        request whose body had another ``digest``."""
        while True:
            stored = self._done.get(key)
            if stored is not None:
                if stored[0] != digest:
                    raise KeyReused(key[1])
                self._done.move_to_end(key)
                return stored[1]
            running = self._running.get(key)
            if running is None:
                self._running[key] = (digest, asyncio.Event())
                return None
            if running[0] != digest:
                raise KeyReused(key[1])
            await running[1].wait()

    def release(self, key: tuple[str, str], reply: Reply | None) -> None:
        """End the work on ``key``, remembering ``reply`` if it is a success."""
        running = self._running.pop(key, None)
        if running is None:
            return
        digest, event = running
        if reply is not None and reply.status == 200:
            self._done[key] = (digest, reply)
            if len(self._done) > self._max:
                self._done.popitem(last=False)
        event.set()
