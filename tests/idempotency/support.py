"""Shared helpers of the idempotency tests: stores with hooks, clocks that act while a
guard waits, and the worker the process race runs in a child process."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable, Mapping
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any, Final

from backstay.idempotency.guard import IdempotencyGuard
from backstay.idempotency.memory import MemoryOperationStore
from backstay.idempotency.records import Acquired, Lease
from backstay.idempotency.settings import GuardSettings
from backstay.store.sqlite.operations import SQLiteOperationStore
from backstay.testing import FakeClock

OP: Final = "wf:task:run"
# Real-time races: callers poll often, so they notice a finished run quickly.
FAST: Final = GuardSettings(
    lease_ttl_s=5.0, wait_timeout_s=30.0, poll_initial_s=0.01, poll_max_s=0.05
)


class ActingClock(FakeClock):
    """A FakeClock that runs ``on_sleep`` (once per sleep) while a caller sleeps on it:
    what other workers do while a guard waits."""

    def __init__(self) -> None:
        super().__init__()
        self.on_sleep: Callable[[], None] | None = None

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        if self.on_sleep is not None:
            self.on_sleep()


class FlakyStore(MemoryOperationStore):
    """A memory store whose ``renew`` raises ``renew_errors`` times, and whose
    ``release`` raises when ``release_fails`` is set."""

    def __init__(self, *, clock: FakeClock, renew_errors: int = 0) -> None:
        super().__init__(clock=clock)
        self.renew_errors = renew_errors
        self.renew_calls = 0
        self.release_fails = False

    def renew(self, lease: Lease) -> bool:
        self.renew_calls += 1
        if self.renew_errors > 0:
            self.renew_errors -= 1
            raise OSError("store unreachable")
        return super().renew(lease)

    def release(self, lease: Lease) -> bool:
        if self.release_fails:
            raise OSError("store unreachable")
        return super().release(lease)


def acquire(store: MemoryOperationStore, owner: str, ttl_s: float = 10.0) -> Lease:
    claim = store.claim(OP, owner, ttl_s)
    assert isinstance(claim, Acquired)
    return claim.lease


class Calls:
    """Counts the calls of an operation and answers with a result naming the call."""

    def __init__(self, result: Mapping[str, Any] | None = None) -> None:
        self.count = 0
        self.result = result

    def sync(self) -> Mapping[str, Any]:
        self.count += 1
        return self.result if self.result is not None else {"call": self.count}

    async def run(self) -> Mapping[str, Any]:
        return self.sync()


def race_in_process(path: str, calls_dir: str, mode: str, barrier: Barrier, results: Any) -> None:
    """One racer: open the store, wait for the others, run the operation, report."""
    with SQLiteOperationStore(path) as store:
        guard = IdempotencyGuard(store, settings=FAST)

        def work() -> dict[str, Any]:
            (Path(calls_dir) / f"{os.getpid()}-{uuid.uuid4().hex}").write_text(mode)
            time.sleep(0.5)
            return {"pid": os.getpid(), "mode": mode}

        async def awork() -> dict[str, Any]:
            (Path(calls_dir) / f"{os.getpid()}-{uuid.uuid4().hex}").write_text(mode)
            await asyncio.sleep(0.5)
            return {"pid": os.getpid(), "mode": mode}

        barrier.wait(timeout=30)
        result = asyncio.run(guard.run(OP, awork)) if mode == "async" else guard.run_sync(OP, work)
    results.put(result)
