"""Time and randomness, injected: every decision takes ``now`` and a random draw as inputs.

``Clock`` is what drivers use to read time and to sleep; ``SYSTEM_CLOCK`` is the real one,
``backstay.testing.FakeClock`` a manual one whose sleeps return at once. ``seeded_unit``
gives reproducible jitter: the same seed, key and attempt give the same draw.
"""

from __future__ import annotations

import datetime as _dt
import random
import time
from collections.abc import Callable, Coroutine
from typing import Any, Final, Protocol, runtime_checkable

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock", "seeded_unit"]


@runtime_checkable
class Clock(Protocol):
    """Monotonic time for durations, wall time for resets, and sleeping."""

    def monotonic(self) -> float: ...

    def now(self) -> _dt.datetime: ...

    def sleep(self, seconds: float) -> None: ...

    async def asleep(self, seconds: float) -> None: ...


# asyncio.sleep, looked up once on the first asleep (a running loop has loaded asyncio by
# then): import backstay does not load asyncio, and a retry pays no import statement.
_ASYNC_SLEEP: list[Callable[[float], Coroutine[Any, Any, None]]] = []


def _async_sleep() -> Callable[[float], Coroutine[Any, Any, None]]:
    import asyncio  # noqa: PLC0415 - see _ASYNC_SLEEP

    _ASYNC_SLEEP.append(asyncio.sleep)
    return asyncio.sleep


class SystemClock:
    """The real clock. Sleeps are cancellable (asyncio) and interruptible (threads)."""

    __slots__ = ()

    # The C function itself: read on every attempt, a Python wrapper would double its cost.
    monotonic = staticmethod(time.monotonic)

    def now(self) -> _dt.datetime:
        return _dt.datetime.now(_dt.UTC)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def asleep(self, seconds: float) -> Coroutine[Any, Any, None]:
        # ``asyncio.sleep``'s own coroutine, awaited by the caller: no frame of ours.
        sleep = _ASYNC_SLEEP[0] if _ASYNC_SLEEP else _async_sleep()
        return sleep(seconds)


SYSTEM_CLOCK: Final = SystemClock()

_SCALE: Final = float(1 << 53)


def seeded_unit(seed: int | str, key: str, attempt: int) -> float:
    """A uniform draw in [0, 1) fixed by ``(seed, key, attempt)``: reproducible jitter."""
    import hashlib  # noqa: PLC0415 - seeded jitter only; not paid at import

    digest = hashlib.blake2b(f"{seed}\x1f{key}\x1f{attempt}".encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "big") >> 11) / _SCALE


# A uniform draw in [0, 1) from the process's random source (jitter, not cryptography):
# the module's own function, so a retry's draw costs no frame of ours.
unseeded_unit: Final[Callable[[], float]] = random.random
