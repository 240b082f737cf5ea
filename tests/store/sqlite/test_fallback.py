"""SQLiteFallbackStore: cooldowns and circuits shared by stores on one file."""

from __future__ import annotations

from pathlib import Path

from backstay.breaker.settings import BreakerSettings
from backstay.errors import AdapterError
from backstay.failure import Failure
from backstay.fallback import Candidate, FallbackChain
from backstay.store import SQLiteFallbackStore
from backstay.testing import FakeClock


def test_a_cooldown_is_seen_by_another_store_on_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with SQLiteFallbackStore(path) as one, SQLiteFallbackStore(path) as two:
        one.cool_down("a/m", until_s=2000.0, reason="rate_limit")
        assert two.cooling_until("a/m", now_s=1000.0) == 2000.0
        assert two.cooling_until("a/m", now_s=2000.0) is None


def test_the_later_cooldown_wins(tmp_path: Path) -> None:
    with SQLiteFallbackStore(tmp_path / "s.sqlite") as store:
        store.cool_down("a/m", until_s=2000.0, reason="first")
        store.cool_down("a/m", until_s=1500.0, reason="shorter")
        assert store.cooling_until("a/m", now_s=0.0) == 2000.0
        store.cool_down("a/m", until_s=3000.0, reason="longer")
        assert store.cooling_until("a/m", now_s=0.0) == 3000.0


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
