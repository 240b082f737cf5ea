"""SQLiteFallbackStore beyond the shared contract (tests/store/test_fallback_store.py): a
circuit outlives the store that opened it."""

from __future__ import annotations

from pathlib import Path

from backstay.breaker.settings import BreakerSettings
from backstay.errors import AdapterError
from backstay.failure import Failure
from backstay.fallback import Candidate, FallbackChain
from backstay.store import SQLiteFallbackStore
from backstay.testing import FakeClock


def test_a_circuit_opened_by_one_chain_is_open_for_a_chain_in_a_later_store(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.sqlite"
    primary = Candidate(provider="p", model="m1")
    spare = Candidate(provider="q", model="m2")
    breaker = BreakerSettings(failure_threshold=1, failure_rate_threshold=None)
    clock = FakeClock()

    def down(candidate: Candidate) -> str:
        if candidate is primary:
            raise AdapterError(Failure(code="ERR_HTTP_502_BAD_GATEWAY"))
        return candidate.model

    with SQLiteFallbackStore(path) as store:
        FallbackChain([primary, spare], breaker=breaker, store=store, clock=clock).call(down)
    with SQLiteFallbackStore(path) as store:
        chain = FallbackChain([primary, spare], breaker=breaker, store=store, clock=clock)
        assert chain.health.available() == [False, True]
