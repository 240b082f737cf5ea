"""MemoryOperationStore: local to the process, safe to share between threads."""

from __future__ import annotations

import threading

from backstay.idempotency.memory import MemoryOperationStore
from backstay.idempotency.records import Acquired, Busy, Claim

THREADS = 16


def test_it_is_local_to_the_process() -> None:
    assert MemoryOperationStore().shared is False


def test_threads_claiming_one_operation_at_once_acquire_it_exactly_once() -> None:
    store = MemoryOperationStore()
    start = threading.Barrier(THREADS)
    claims: list[Claim] = []

    def claimant(index: int) -> None:
        start.wait(timeout=10)
        claims.append(store.claim("wf:task:run", f"w{index}", 30.0))

    workers = [threading.Thread(target=claimant, args=(i,)) for i in range(THREADS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert len(claims) == THREADS
    assert sum(isinstance(c, Acquired) for c in claims) == 1
    assert sum(isinstance(c, Busy) for c in claims) == THREADS - 1
