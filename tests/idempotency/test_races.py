"""Callers racing on one operation — threads, asyncio tasks, real processes: the operation
runs exactly once and every caller gets the same result. Real time, bounded joins."""

from __future__ import annotations

import asyncio
import multiprocessing
import queue
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.idempotency.support import FAST, OP, race_in_process

from backstay.idempotency.guard import IdempotencyGuard
from backstay.idempotency.memory import MemoryOperationStore
from backstay.idempotency.store import OperationStore
from backstay.store.sqlite.operations import SQLiteOperationStore

THREADS = 4
TASKS = 4
PROCESS_MODES = ("sync", "async", "sync")


class _Counted:
    """A slow operation that counts its runs; long enough that the racers meet."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.runs = 0

    def sync(self) -> Mapping[str, Any]:
        with self._lock:
            self.runs += 1
            run = self.runs
        time.sleep(0.3)
        return {"run": run, "items": (1, 2)}

    async def run(self) -> Mapping[str, Any]:
        with self._lock:
            self.runs += 1
            run = self.runs
        await asyncio.sleep(0.3)
        return {"run": run}


def _race_threads(stores: list[OperationStore], fn: Any) -> list[Any]:
    start = threading.Barrier(len(stores))
    results: list[Any] = []

    def racer(store: OperationStore) -> None:
        start.wait(timeout=10)
        try:
            results.append(IdempotencyGuard(store, settings=FAST).run_sync(OP, fn))
        except Exception as exc:
            results.append(exc)

    workers = [threading.Thread(target=racer, args=(store,)) for store in stores]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert not any(worker.is_alive() for worker in workers)
    return results


def test_threads_sharing_a_memory_store_run_the_operation_once() -> None:
    store = MemoryOperationStore()
    counted = _Counted()
    results = _race_threads([store] * THREADS, counted.sync)
    assert counted.runs == 1
    assert results == [{"run": 1, "items": [1, 2]}] * THREADS


def test_threads_with_their_own_sqlite_stores_run_the_operation_once(tmp_path: Path) -> None:
    path = tmp_path / "operations.sqlite"
    stores = [SQLiteOperationStore(path) for _ in range(THREADS)]
    try:
        counted = _Counted()
        results = _race_threads(list(stores), counted.sync)
    finally:
        for store in stores:
            store.close()
    assert counted.runs == 1
    assert results == [{"run": 1, "items": [1, 2]}] * THREADS


def test_a_failed_run_lets_a_waiting_thread_run_the_operation() -> None:
    store = MemoryOperationStore()
    first = threading.Event()
    runs: list[str] = []

    def flaky() -> Mapping[str, Any]:
        if not first.is_set():
            first.set()
            runs.append("failed")
            time.sleep(0.2)
            raise RuntimeError("provider down")
        runs.append("ok")
        return {"ok": True}

    results = _race_threads([store, store], flaky)
    assert runs == ["failed", "ok"]
    assert {repr(r) for r in results} == {repr(RuntimeError("provider down")), "{'ok': True}"}


def test_asyncio_tasks_run_the_operation_once() -> None:
    store = MemoryOperationStore()
    guard = IdempotencyGuard(store, settings=FAST)
    counted = _Counted()

    async def race() -> list[dict[str, Any]]:
        runs = [guard.run(OP, counted.run) for _ in range(TASKS)]
        return await asyncio.wait_for(asyncio.gather(*runs), 30)

    assert asyncio.run(race()) == [{"run": 1}] * TASKS
    assert counted.runs == 1


def test_asyncio_tasks_with_sqlite_stores_run_the_operation_once(tmp_path: Path) -> None:
    path = tmp_path / "operations.sqlite"
    counted = _Counted()
    with SQLiteOperationStore(path) as one, SQLiteOperationStore(path) as two:
        guards = [IdempotencyGuard(store, settings=FAST) for store in (one, two)]

        async def race() -> list[dict[str, Any]]:
            runs = [guard.run(OP, counted.run) for guard in guards]
            return await asyncio.wait_for(asyncio.gather(*runs), 30)

        assert asyncio.run(race()) == [{"run": 1}] * 2
    assert counted.runs == 1


def test_processes_sharing_a_sqlite_file_run_the_operation_once(tmp_path: Path) -> None:
    path = tmp_path / "operations.sqlite"
    calls = tmp_path / "calls"
    calls.mkdir()
    SQLiteOperationStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(PROCESS_MODES))
    results = ctx.Queue()
    processes = [
        ctx.Process(target=race_in_process, args=(str(path), str(calls), mode, barrier, results))
        for mode in PROCESS_MODES
    ]
    try:
        for process in processes:
            process.start()
        try:
            answers = [results.get(timeout=60) for _ in processes]
        except queue.Empty:
            pytest.fail("a racing process reported no result within 60 s")
        for process in processes:
            process.join(timeout=30)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join(timeout=10)
        results.close()
        results.join_thread()
    assert [process.exitcode for process in processes] == [0] * len(processes)
    assert len(list(calls.iterdir())) == 1
    assert all(answer == answers[0] for answer in answers)
