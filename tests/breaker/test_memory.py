"""MemoryBreakerStore: one record per name, replaced whole, atomically."""

from __future__ import annotations

from backstay.breaker.memory import MemoryBreakerStore
from backstay.breaker.record import CLOSED_RECORD, BreakerRecord, CircuitState
from backstay.breaker.state import Step
from backstay.breaker.store import BreakerStore


def test_it_is_a_breaker_store_local_to_the_process() -> None:
    store = MemoryBreakerStore()
    assert isinstance(store, BreakerStore)
    assert store.shared is False


def test_an_unknown_name_has_no_record() -> None:
    assert MemoryBreakerStore().load("op") is None


def test_a_transition_starts_from_a_closed_record_and_keeps_the_result() -> None:
    store = MemoryBreakerStore()
    seen: list[BreakerRecord] = []

    def fn(record: BreakerRecord) -> Step:
        seen.append(record)
        return Step(record._replace(state=CircuitState.OPEN))

    store.transition("op", fn)
    assert seen == [CLOSED_RECORD]
    loaded = store.load("op")
    assert loaded is not None
    assert loaded.state is CircuitState.OPEN


def test_a_transition_that_changes_nothing_writes_nothing() -> None:
    store = MemoryBreakerStore()
    store.transition("op", Step)
    assert store.load("op") is None
    assert store.names() == []


def test_names_lists_the_records_sorted() -> None:
    store = MemoryBreakerStore()
    for name in ("b", "a"):
        store.transition(name, lambda r: Step(r._replace(epoch=1)))
    assert store.names() == ["a", "b"]
