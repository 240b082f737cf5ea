"""The lease keeper: a long run keeps its lease, a lost lease stops the keeper.

FakeClock tests move time by hand and wait (bounded, in real time) for the keeper to
notice; the real-time tests use leases of 1 s around runs of 1.2 s, with room for a loaded machine.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from tests.idempotency.support import OP, FlakyStore, acquire

from backstay.idempotency._keeper import keep_async, keep_in_thread
from backstay.idempotency.guard import IdempotencyGuard
from backstay.idempotency.memory import MemoryOperationStore
from backstay.idempotency.records import Busy, Claim
from backstay.idempotency.settings import GuardSettings
from backstay.testing import FakeClock

TTL_S = 3.0
STEPS = 6  # each step advances a third of the TTL: two TTLs in all


def _renewed(store: MemoryOperationStore, clock: FakeClock) -> bool:
    probe = store.claim(OP, "intruder", TTL_S)
    assert isinstance(probe, Busy), "the lease ran out while its run was going on"
    return probe.expires_at == pytest.approx(clock.now().timestamp() + TTL_S, abs=1e-3)


def _wait_until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 5.0
    while not check():
        assert time.monotonic() < deadline, "the keeper did not renew in time"
        time.sleep(0.005)


async def _await_until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 5.0
    while not check():
        assert time.monotonic() < deadline, "the keeper did not renew in time"
        await asyncio.sleep(0.005)


def test_a_long_async_run_keeps_its_lease_on_a_fake_clock() -> None:
    clock = FakeClock()
    store = MemoryOperationStore(clock=clock)
    guard = IdempotencyGuard(store, settings=GuardSettings(lease_ttl_s=TTL_S), clock=clock)

    async def long_run() -> Mapping[str, Any]:
        for _ in range(STEPS):
            clock.advance(TTL_S / 3)
            await _await_until(lambda: _renewed(store, clock))
        return {"ok": True}

    assert asyncio.run(guard.run(OP, long_run)) == {"ok": True}


def test_a_long_sync_run_keeps_its_lease_on_a_fake_clock() -> None:
    clock = FakeClock()
    store = MemoryOperationStore(clock=clock)
    guard = IdempotencyGuard(store, settings=GuardSettings(lease_ttl_s=TTL_S), clock=clock)

    def long_run() -> Mapping[str, Any]:
        for _ in range(STEPS):
            clock.advance(TTL_S / 3)
            _wait_until(lambda: _renewed(store, clock))
        return {"ok": True}

    assert guard.run_sync(OP, long_run) == {"ok": True}


REAL_TTL_S = 1.0
REAL_STEP_S = 0.3


def _probe_real(store: MemoryOperationStore, probes: list[Claim]) -> None:
    probes.append(store.claim(OP, "intruder", REAL_TTL_S))


def test_a_long_async_run_keeps_a_short_lease_in_real_time() -> None:
    store = MemoryOperationStore()
    guard = IdempotencyGuard(store, settings=GuardSettings(lease_ttl_s=REAL_TTL_S))
    probes: list[Claim] = []

    async def long_run() -> Mapping[str, Any]:
        for _ in range(4):
            await asyncio.sleep(REAL_STEP_S)
            _probe_real(store, probes)
        return {"ok": True}

    assert asyncio.run(asyncio.wait_for(guard.run(OP, long_run), 10)) == {"ok": True}
    assert all(isinstance(p, Busy) for p in probes)
    assert len(probes) == 4


def test_a_long_sync_run_keeps_a_short_lease_in_real_time() -> None:
    store = MemoryOperationStore()
    guard = IdempotencyGuard(store, settings=GuardSettings(lease_ttl_s=REAL_TTL_S))
    probes: list[Claim] = []

    def long_run() -> Mapping[str, Any]:
        for _ in range(4):
            time.sleep(REAL_STEP_S)
            _probe_real(store, probes)
        return {"ok": True}

    assert guard.run_sync(OP, long_run) == {"ok": True}
    assert all(isinstance(p, Busy) for p in probes)


def test_the_async_keeper_returns_when_the_lease_is_taken_over() -> None:
    clock = FakeClock()
    store = MemoryOperationStore(clock=clock)
    lease = acquire(store, "me", ttl_s=TTL_S)
    clock.advance(TTL_S)
    acquire(store, "intruder")
    asyncio.run(asyncio.wait_for(keep_async(store, lease, clock), 5))


def test_the_thread_keeper_returns_when_the_lease_is_taken_over() -> None:
    clock = FakeClock()
    store = MemoryOperationStore(clock=clock)
    lease = acquire(store, "me", ttl_s=TTL_S)
    clock.advance(TTL_S)
    acquire(store, "intruder")
    keeper = threading.Thread(target=keep_in_thread, args=(store, lease, clock, threading.Event()))
    keeper.start()
    keeper.join(timeout=5)
    assert not keeper.is_alive()


def test_a_renewal_that_raises_is_retried_and_the_lease_kept() -> None:
    clock = FakeClock()
    store = FlakyStore(clock=clock, renew_errors=1)
    lease = acquire(store, "me", ttl_s=TTL_S)

    async def scenario() -> None:
        keeper = asyncio.create_task(keep_async(store, lease, clock))
        clock.advance(TTL_S / 3)
        await _await_until(lambda: store.renew_calls >= 1)
        clock.advance(TTL_S / 3)
        await _await_until(lambda: store.renew_calls >= 2)
        assert not keeper.done()
        keeper.cancel()
        with pytest.raises(asyncio.CancelledError):
            await keeper

    asyncio.run(scenario())
    assert store.renew_errors == 0
    assert isinstance(store.claim(OP, "intruder", TTL_S), Busy)


def test_renewals_that_raise_until_the_lease_runs_out_end_the_keeper() -> None:
    clock = FakeClock()
    store = FlakyStore(clock=clock, renew_errors=1_000)
    lease = acquire(store, "me", ttl_s=TTL_S)

    async def scenario() -> None:
        keeper = asyncio.create_task(keep_async(store, lease, clock))
        for _ in range(4):
            clock.advance(TTL_S / 3)
            await asyncio.sleep(0.15)
        await asyncio.wait_for(keeper, 5)

    asyncio.run(scenario())
    assert store.renew_calls >= 2
