"""Many callers at once against one half-open breaker: exactly the probe limit gets through.

Every admitted probe is held (never reported), as if still running, so each admission
takes a slot for good. Loops are bounded; each test finishes in about a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path

from tests.breaker.support import SERVER

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.record import CircuitState
from backstay.breaker.settings import BreakerSettings
from backstay.breaker.store import BreakerStore
from backstay.errors import CircuitOpen
from backstay.policy.protocols import Permit
from backstay.store.sqlite.breakers import SQLiteBreakerStore
from backstay.testing import FakeClock

PROBES = 3
SETTINGS = BreakerSettings(
    failure_threshold=1,
    failure_rate_threshold=None,
    open_duration_s=10.0,
    half_open_max_probes=PROBES,
    success_threshold=PROBES,
)


def _due_for_probes(store: BreakerStore | None = None) -> CircuitBreaker:
    clock = FakeClock()
    breaker = CircuitBreaker("op", settings=SETTINGS, store=store, clock=clock)
    breaker.acquire().failure(SERVER)
    clock.advance(SETTINGS.open_duration_s)
    return breaker


def _race_threads(breakers: list[CircuitBreaker], threads: int) -> list[Permit]:
    admitted: list[Permit] = []
    refused: list[CircuitOpen] = []
    start = threading.Barrier(threads)

    def caller(index: int) -> None:
        start.wait(timeout=10)
        try:
            admitted.append(breakers[index % len(breakers)].acquire())
        except CircuitOpen as exc:
            refused.append(exc)

    workers = [threading.Thread(target=caller, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert len(admitted) + len(refused) == threads
    return admitted


def test_one_hundred_threads_get_exactly_the_probe_limit() -> None:
    breaker = _due_for_probes()
    assert len(_race_threads([breaker], 100)) == PROBES
    assert breaker.state is CircuitState.HALF_OPEN


def test_one_thousand_tasks_on_four_event_loops_get_exactly_the_probe_limit() -> None:
    breaker = _due_for_probes()
    admitted: list[Permit] = []
    start = threading.Barrier(4)

    async def task() -> None:
        await asyncio.sleep(0)
        with contextlib.suppress(CircuitOpen):
            admitted.append(breaker.acquire())

    async def tasks(count: int) -> None:
        await asyncio.gather(*(task() for _ in range(count)))

    def loop() -> None:
        start.wait(timeout=10)
        asyncio.run(tasks(250))

    loops = [threading.Thread(target=loop) for _ in range(4)]
    for thread in loops:
        thread.start()
    for thread in loops:
        thread.join(timeout=30)
    assert len(admitted) == PROBES


def test_released_probes_are_given_again_and_never_more_than_the_limit_at_once() -> None:
    breaker = _due_for_probes()
    out = 0
    peak = 0
    lock = threading.Lock()

    def caller() -> None:
        nonlocal out, peak
        for _ in range(200):
            try:
                permit = breaker.acquire()
            except CircuitOpen:
                continue
            with lock:
                out += 1
                peak = max(peak, out)
            with lock:
                out -= 1
            permit.release()

    workers = [threading.Thread(target=caller) for _ in range(16)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert 1 <= peak <= PROBES
    assert breaker.state is CircuitState.HALF_OPEN
    assert breaker.snapshot().probes_in_flight == 0


def test_threads_on_separate_sqlite_stores_get_exactly_the_probe_limit(tmp_path: Path) -> None:
    path = tmp_path / "breakers.sqlite"
    stores = [SQLiteBreakerStore(path, timeout_s=30.0) for _ in range(4)]
    try:
        first = _due_for_probes(stores[0])
        clock = FakeClock()
        clock.advance(SETTINGS.open_duration_s)
        others = [
            CircuitBreaker("op", settings=SETTINGS, store=store, clock=clock)
            for store in stores[1:]
        ]
        assert len(_race_threads([first, *others], 100)) == PROBES
    finally:
        for store in stores:
            store.close()
