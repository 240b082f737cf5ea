"""SQLiteBreakerStore beyond the shared contract (tests/store/test_breaker_store.py): state
that survives restarts, Unix time stamps, and processes sharing one file."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.breaker.support import SERVER

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.settings import BreakerSettings
from backstay.errors import CircuitOpen
from backstay.store.sqlite.breakers import SQLiteBreakerStore
from backstay.testing import FakeClock

SETTINGS = BreakerSettings(failure_threshold=2, failure_rate_threshold=None, open_duration_s=10.0)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "breakers.sqlite"


@pytest.fixture
def store(path: Path) -> Iterator[SQLiteBreakerStore]:
    with SQLiteBreakerStore(path) as opened:
        yield opened


def _breaker(store: SQLiteBreakerStore, clock: FakeClock) -> CircuitBreaker:
    return CircuitBreaker("anthropic/claude", settings=SETTINGS, store=store, clock=clock)


def test_the_state_survives_closing_and_reopening_the_file(path: Path) -> None:
    clock = FakeClock()
    with SQLiteBreakerStore(path) as before:
        breaker = _breaker(before, clock)
        breaker.acquire().failure(SERVER)
        breaker.acquire().failure(SERVER)
    clock.advance(4.0)
    with SQLiteBreakerStore(path) as after:
        with pytest.raises(CircuitOpen) as info:
            _breaker(after, clock).acquire()
        assert info.value.retry_after_s == pytest.approx(6.0)


def test_records_are_stamped_in_unix_time(store: SQLiteBreakerStore) -> None:
    clock = FakeClock()
    breaker = _breaker(store, clock)
    breaker.acquire().failure(SERVER)
    breaker.acquire().failure(SERVER)
    record = store.load("anthropic/claude")
    assert record is not None
    assert record.opened_at == clock.now().timestamp()
    assert breaker.snapshot().opened_at == clock.now()


_CHILD = textwrap.dedent(
    """
    import sys
    from backstay.breaker import BreakerSettings, CircuitBreaker
    from backstay.store import SQLiteBreakerStore
    from backstay.errors import CircuitOpen

    settings = BreakerSettings(
        failure_threshold=1, failure_rate_threshold=None, open_duration_s=0.0,
        half_open_max_probes=3, success_threshold=3,
    )
    got = 0
    with SQLiteBreakerStore(sys.argv[1], timeout_s=30.0) as store:
        breaker = CircuitBreaker("op", settings=settings, store=store)
        for _ in range(int(sys.argv[2])):
            try:
                breaker.acquire()  # held: never reported, as if the probe were still running
                got += 1
            except CircuitOpen:
                pass
    print(got)
    """
)


def test_processes_sharing_the_file_reserve_exactly_the_probe_limit(path: Path) -> None:
    settings = SETTINGS.derive(
        failure_threshold=1, open_duration_s=0.0, half_open_max_probes=3, success_threshold=3
    )
    with SQLiteBreakerStore(path) as store:
        CircuitBreaker("op", settings=settings, store=store).acquire().failure(SERVER)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(path), "50"], stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    admitted = [int(child.communicate(timeout=60)[0]) for child in children]
    assert sum(admitted) == 3
