"""IdempotencyGuard.run: the async driver. Time is a FakeClock unless a test says otherwise."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest
from tests.idempotency.support import OP, ActingClock, Calls, FlakyStore, acquire

from backstay.errors import ConfigError
from backstay.idempotency.errors import LeaseLost, OperationInProgress
from backstay.idempotency.guard import IdempotencyGuard
from backstay.idempotency.memory import MemoryOperationStore
from backstay.idempotency.records import Acquired, Busy
from backstay.idempotency.settings import GuardSettings
from backstay.testing import FakeClock

SETTINGS = GuardSettings(lease_ttl_s=3.0, wait_timeout_s=10.0, poll_initial_s=0.5, poll_max_s=2.0)


def _guard(clock: FakeClock) -> tuple[IdempotencyGuard, MemoryOperationStore]:
    store = MemoryOperationStore(clock=clock)
    return IdempotencyGuard(store, settings=SETTINGS, owner="me", clock=clock), store


def test_a_cached_result_is_returned_without_calling_fn() -> None:
    guard, store = _guard(FakeClock())
    store.complete(acquire(store, "earlier"), {"answer": 42})
    calls = Calls()
    assert asyncio.run(guard.run(OP, calls.run)) == {"answer": 42}
    assert calls.count == 0


def test_fn_runs_once_and_later_runs_get_its_result() -> None:
    guard, _ = _guard(FakeClock())
    calls = Calls()
    first = asyncio.run(guard.run(OP, calls.run))
    second = asyncio.run(guard.run(OP, calls.run))
    assert first == second == {"call": 1}
    assert calls.count == 1


def test_the_result_is_returned_as_stored() -> None:
    guard, _ = _guard(FakeClock())
    calls = Calls({"items": (1, 2)})
    assert asyncio.run(guard.run(OP, calls.run)) == {"items": [1, 2]}


def test_a_failure_propagates_unchanged_and_records_nothing() -> None:
    guard, store = _guard(FakeClock())
    error = RuntimeError("provider down")

    async def fail() -> Mapping[str, Any]:
        raise error

    with pytest.raises(RuntimeError) as info:
        asyncio.run(guard.run(OP, fail))
    assert info.value is error
    assert store.get(OP) is None


def test_a_failure_releases_the_lease_so_the_next_claimant_runs() -> None:
    clock = FakeClock()
    guard, store = _guard(clock)

    async def fail() -> Mapping[str, Any]:
        raise RuntimeError("provider down")

    with pytest.raises(RuntimeError):
        asyncio.run(guard.run(OP, fail))
    other = IdempotencyGuard(store, settings=SETTINGS, owner="other", clock=clock)
    calls = Calls()
    assert asyncio.run(other.run(OP, calls.run, wait=False)) == {"call": 1}
    assert calls.count == 1


def test_a_result_json_cannot_hold_is_refused_and_the_lease_released() -> None:
    guard, store = _guard(FakeClock())
    calls = Calls({"when": object()})
    with pytest.raises(ConfigError) as info:
        asyncio.run(guard.run(OP, calls.run))
    assert info.value.where == "result"
    assert isinstance(store.claim(OP, "next", 1.0), Acquired)


def test_a_busy_operation_raises_in_progress_when_told_not_to_wait() -> None:
    clock = FakeClock()
    guard, store = _guard(clock)
    lease = acquire(store, "other")
    calls = Calls()
    with pytest.raises(OperationInProgress) as info:
        asyncio.run(guard.run(OP, calls.run, wait=False))
    assert info.value.held_by == "other"
    assert info.value.expires_at == lease.expires_at
    assert info.value.retry_after_s == pytest.approx(10.0)
    assert calls.count == 0
    assert clock.sleeps == []


def test_a_waiter_gives_up_after_its_wait_timeout_with_growing_polls() -> None:
    clock = FakeClock()
    guard, store = _guard(clock)
    acquire(store, "other", ttl_s=1_000.0)
    calls = Calls()
    with pytest.raises(OperationInProgress, match="after waiting"):
        asyncio.run(guard.run(OP, calls.run, wait_timeout_s=5.0))
    assert clock.sleeps == pytest.approx([0.5, 1.0, 2.0, 1.5])
    assert calls.count == 0


def test_a_waiter_returns_the_result_the_holder_completes() -> None:
    clock = ActingClock()
    guard, store = _guard(clock)
    lease = acquire(store, "other")

    def holder_finishes() -> None:
        store.complete(lease, {"by": "other"})

    clock.on_sleep = holder_finishes
    calls = Calls()
    assert asyncio.run(guard.run(OP, calls.run)) == {"by": "other"}
    assert calls.count == 0


def test_a_waiter_runs_fn_itself_when_the_holder_fails() -> None:
    clock = ActingClock()
    guard, store = _guard(clock)
    lease = acquire(store, "other")

    def holder_fails() -> None:
        store.release(lease)

    clock.on_sleep = holder_fails
    calls = Calls()
    assert asyncio.run(guard.run(OP, calls.run)) == {"call": 1}


def test_a_waiter_takes_over_when_the_holder_stops_renewing() -> None:
    clock = FakeClock()
    guard, store = _guard(clock)
    acquire(store, "crashed", ttl_s=2.0)
    calls = Calls()
    assert asyncio.run(guard.run(OP, calls.run)) == {"call": 1}
    assert sum(clock.sleeps) >= 2.0


def test_fn_is_cancelled_and_lease_lost_raised_when_another_owner_takes_over() -> None:
    clock = FakeClock()
    guard, store = _guard(clock)
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def slow() -> Mapping[str, Any]:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return {"late": True}

    async def scenario() -> None:
        run = asyncio.create_task(guard.run(OP, slow))
        await asyncio.wait_for(started.wait(), 5)
        clock.advance(SETTINGS.lease_ttl_s)
        intruder = acquire(store, "intruder")
        with pytest.raises(LeaseLost) as info:
            await asyncio.wait_for(run, 5)
        assert info.value.generation == 1
        assert store.complete(intruder, {"by": "intruder"}) is not None

    asyncio.run(scenario())
    assert cancelled == [True]


def test_cancelling_the_run_cancels_fn_and_releases_the_lease() -> None:
    guard, store = _guard(FakeClock())
    started = asyncio.Event()

    async def slow() -> Mapping[str, Any]:
        started.set()
        await asyncio.sleep(30)
        return {}

    async def scenario() -> None:
        run = asyncio.create_task(guard.run(OP, slow))
        await asyncio.wait_for(started.wait(), 5)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(run, 5)

    asyncio.run(scenario())
    claim = store.claim(OP, "next", 1.0)
    assert isinstance(claim, Acquired)
    assert claim.lease.generation == 2


def test_fn_failing_as_it_is_cancelled_is_not_reported_as_never_retrieved() -> None:
    """A task cancelled while its store is gone fails as it unwinds (recording the
    interruption raises): the run ends cancelled, and asyncio never reports that failure
    as "Task exception was never retrieved"."""
    guard, _ = _guard(FakeClock())
    started = asyncio.Event()
    reported: list[dict[str, Any]] = []

    async def unwinds_badly() -> Mapping[str, Any]:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            raise RuntimeError("the store does not answer") from None
        return {}

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: reported.append(context)
        )
        run = asyncio.create_task(guard.run(OP, unwinds_badly))
        await asyncio.wait_for(started.wait(), 5)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(run, 5)
        del run
        gc.collect()

    asyncio.run(scenario())
    gc.collect()
    assert [c.get("message") for c in reported] == []


@pytest.mark.parametrize("later_by", range(6))
def test_runs_failing_together_in_a_task_group_leave_no_failure_never_retrieved(
    later_by: int,
) -> None:
    """Two guarded runs in one task group fail a few loop turns apart (the store died under
    both): the group cancels the second while it is still stopping its lease keeper, and
    its own failure is still retrieved: asyncio reports nothing."""
    reported: list[dict[str, Any]] = []

    class Gone(Exception):
        pass

    async def fails_after(turns: int) -> Mapping[str, Any]:
        for _ in range(turns):
            await asyncio.sleep(0)
        raise Gone("the store does not answer")

    async def both(guard: IdempotencyGuard) -> None:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(guard.run("op-a", lambda: fails_after(0)))
            tasks.create_task(guard.run("op-b", lambda: fails_after(later_by)))

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: reported.append(context)
        )
        guard = IdempotencyGuard(MemoryOperationStore(), settings=SETTINGS, owner="me")
        with pytest.raises(ExceptionGroup) as group:
            await both(guard)
        assert all(isinstance(e, Gone) for e in group.value.exceptions)
        del group
        gc.collect()

    asyncio.run(scenario())
    gc.collect()
    assert [c.get("message") for c in reported] == []


def test_a_store_error_while_releasing_is_noted_on_the_original_error() -> None:
    clock = FakeClock()
    store = FlakyStore(clock=clock)
    store.release_fails = True
    guard = IdempotencyGuard(store, settings=SETTINGS, clock=clock)

    async def fail() -> Mapping[str, Any]:
        raise RuntimeError("provider down")

    with pytest.raises(RuntimeError, match="provider down") as info:
        asyncio.run(guard.run(OP, fail))
    assert any("releasing the lease" in note for note in info.value.__notes__)


def test_a_non_idempotent_operation_without_a_key_is_refused() -> None:
    guard, _ = _guard(FakeClock())
    calls = Calls()
    for key in (None, ""):
        with pytest.raises(ConfigError, match="without a key are refused") as info:
            asyncio.run(guard.run_non_idempotent(key, calls.run))
        assert info.value.where == "operation_id"
    assert calls.count == 0


def test_a_non_idempotent_operation_with_a_key_runs_once() -> None:
    guard, _ = _guard(FakeClock())
    calls = Calls()
    asyncio.run(guard.run_non_idempotent(OP, calls.run))
    assert asyncio.run(guard.run_non_idempotent(OP, calls.run)) == {"call": 1}
    assert calls.count == 1


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"lease_ttl_s": 0.0}, "lease_ttl_s"),
        ({"wait_timeout_s": -1.0}, "wait_timeout_s"),
        ({"owner": ""}, "owner"),
    ],
)
def test_a_bad_argument_is_refused_naming_it(kwargs: dict[str, Any], where: str) -> None:
    guard, _ = _guard(FakeClock())
    with pytest.raises(ConfigError) as info:
        asyncio.run(guard.run(OP, Calls().run, **kwargs))
    assert info.value.where == where


def test_an_empty_operation_id_is_refused() -> None:
    guard, _ = _guard(FakeClock())
    with pytest.raises(ConfigError) as info:
        asyncio.run(guard.run("", Calls().run))
    assert info.value.where == "operation_id"


def test_the_default_owner_names_the_host_and_process() -> None:
    clock = FakeClock()
    store = MemoryOperationStore(clock=clock)
    guard = IdempotencyGuard(store, clock=clock)
    assert guard.owner.startswith(f"{socket.gethostname()}:{os.getpid()}:")
    assert guard.owner != IdempotencyGuard(store).owner


def test_a_per_call_owner_and_ttl_are_used_for_the_lease() -> None:
    clock = FakeClock()
    guard, store = _guard(clock)
    seen: list[Busy] = []

    async def peek() -> Mapping[str, Any]:
        claim = store.claim(OP, "probe", 1.0)
        assert isinstance(claim, Busy)
        seen.append(claim)
        return {}

    asyncio.run(guard.run(OP, peek, owner="worker-7", lease_ttl_s=42.0))
    assert seen[0].held_by == "worker-7"
    assert seen[0].expires_at == clock.now().timestamp() + 42.0


def _dead_owner() -> str:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=10)
    return f"{socket.gethostname()}:{proc.pid}:feedf00d"


def test_a_lease_whose_holder_process_is_gone_is_taken_over_at_once() -> None:
    clock = FakeClock()
    guard, store = _guard(clock)
    dead = acquire(store, _dead_owner(), ttl_s=3600.0)
    calls, started = Calls(), clock.monotonic()
    assert asyncio.run(guard.run(OP, calls.run, wait=False)) == {"call": 1}
    assert clock.monotonic() == started  # no wait for the hour-long lease
    assert not store.renew(dead)  # the dead holder is fenced off


def test_taking_over_dead_holders_can_be_turned_off() -> None:
    clock = FakeClock()
    store = MemoryOperationStore(clock=clock)
    settings = dataclasses.replace(SETTINGS, take_over_dead_holders=False)
    guard = IdempotencyGuard(store, settings=settings, owner="me", clock=clock)
    acquire(store, _dead_owner(), ttl_s=3600.0)
    with pytest.raises(OperationInProgress):
        asyncio.run(guard.run(OP, Calls().run, wait=False))
