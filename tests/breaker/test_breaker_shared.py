"""CircuitBreaker on a shared store decides a success from the record its call was
admitted under: no second read when that success changes nothing there, the store's
transition (which reads the stored record) when it does; a failure goes straight to the
transition. A store in memory reads at every report, as before."""

from __future__ import annotations

from tests.breaker.support import SERVER

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.memory import MemoryBreakerStore
from backstay.breaker.record import BreakerRecord, CircuitState
from backstay.breaker.settings import BreakerSettings
from backstay.breaker.state import Step
from backstay.breaker.store import TransitionFn

SETTINGS = BreakerSettings(failure_threshold=2, failure_rate_threshold=None, open_duration_s=10.0)


class CountingStore:
    """A memory store that counts its reads and transitions; ``shared`` as asked."""

    def __init__(self, *, shared: bool) -> None:
        self.shared = shared
        self._inner = MemoryBreakerStore()
        self.loads = 0
        self.transitions = 0

    def load(self, name: str) -> BreakerRecord | None:
        self.loads += 1
        return self._inner.load(name)

    def transition(self, name: str, fn: TransitionFn) -> Step:
        self.transitions += 1
        return self._inner.transition(name, fn)

    def names(self) -> list[str]:
        return self._inner.names()


def test_a_quiet_success_on_a_shared_store_reads_only_at_admission() -> None:
    store = CountingStore(shared=True)
    breaker = CircuitBreaker("p/m", settings=SETTINGS, store=store)
    permit = breaker.acquire()
    permit.success()
    assert (store.loads, store.transitions) == (1, 0)


def test_a_success_that_changes_the_admission_record_is_a_transition() -> None:
    store = CountingStore(shared=True)
    breaker = CircuitBreaker("p/m", settings=SETTINGS, store=store)
    breaker.acquire().failure(SERVER)
    store.loads = store.transitions = 0
    breaker.acquire().success()
    assert (store.loads, store.transitions) == (1, 1)
    breaker.acquire().failure(SERVER)
    assert breaker.state is CircuitState.CLOSED  # the success reset the count


def test_a_failure_on_a_shared_store_goes_straight_to_the_transition() -> None:
    store = CountingStore(shared=True)
    breaker = CircuitBreaker("p/m", settings=SETTINGS, store=store)
    permit = breaker.acquire()
    store.loads = 0
    permit.failure(SERVER)
    assert (store.loads, store.transitions) == (0, 1)


def test_a_success_is_placed_at_its_admission_on_a_shared_store() -> None:
    """A failure reported while a call admitted on a clean record was running is not
    wiped by that call's success: the success is ordered at its admission, before it."""
    store = CountingStore(shared=True)
    breaker = CircuitBreaker("p/m", settings=SETTINGS, store=store)
    running = breaker.acquire()
    breaker.acquire().failure(SERVER)
    running.success()
    assert breaker.snapshot().consecutive_failures == 1


def test_a_store_in_memory_reads_the_record_again_at_a_success() -> None:
    store = CountingStore(shared=False)
    breaker = CircuitBreaker("p/m", settings=SETTINGS, store=store)
    running = breaker.acquire()
    breaker.acquire().failure(SERVER)
    running.success()
    assert breaker.snapshot().consecutive_failures == 0


def test_permits_of_one_unchanged_record_are_one_object() -> None:
    store = CountingStore(shared=True)
    breaker = CircuitBreaker("p/m", settings=SETTINGS, store=store)
    assert breaker.acquire() is breaker.acquire()
    first = breaker.acquire()
    breaker.acquire().failure(SERVER)
    assert breaker.acquire() is not first
