"""A fleet: two ``backstay gateway --store redis://…`` processes on one real redis-server
hold one provider limit together. The provider's bucket is used up (by others) before they
start; 60 requests split across both at 600 a minute: at most 5 % of what the provider
sees is a 429 (counted by the fake provider), whether the limit is configured or learned
from the provider's headers. The time the requests take against M / R
is measured by ``bench/gateway.py``, not asserted here."""

from __future__ import annotations

import contextlib
import selectors
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
import yaml
from tests.gateway.helpers import ANTHROPIC_MODEL, CANARY_KEY, GEMINI_MODEL
from tests.gateway.limits_support import drain, send

from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.fakeprovider.scenario import RateLimit
from backstay.store.location import STORE_ENV_VAR, StoreLocation
from backstay.store.open import open_stores
from backstay.store.redis import RedisConnection
from backstay.store.redis.limiter import RedisRateLimiter

MAIN: Final = "from backstay.cli import main; main()"
WAIT_S: Final = 30.0
RPM: Final = 600
REQUESTS: Final = 60


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # No backstay.yaml, no store from the environment: the flags alone.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)


def _url_of(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(WAIT_S):
            raise AssertionError("the gateway printed no URL")
    line = proc.stdout.readline()
    assert line.startswith("gateway listening on "), line
    return line.split()[-1]


def _stop(proc: subprocess.Popen[str]) -> str:
    """SIGTERM by PID (KILL if it does not stop); what it wrote to stderr."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate(timeout=WAIT_S)
    return err


@contextlib.contextmanager
def _fleet(
    location: StoreLocation, *extra: str, api: str = "anthropic"
) -> Iterator[tuple[FakeProvider, list[str]]]:
    """A fake provider limited to RPM a minute, its bucket used up, and two gateways in
    front of it on one Redis store (``extra``: more flags); every process stopped by PID
    at the end."""
    assert location.url is not None
    with FakeProvider(Scenario(rate_limit=RateLimit(requests_per_minute=RPM))) as fake:
        argv = [
            sys.executable, "-c", MAIN, "gateway", "--port", "0", "--upstream", fake.url,
            "--store", location.url, *extra,
        ]  # fmt: skip
        procs = [
            subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        try:
            urls = [_url_of(proc) for proc in procs]
            drain(fake, api)
            yield fake, urls
        finally:
            errors = [_stop(proc) for proc in procs]
        for proc, err in zip(procs, errors, strict=True):
            assert proc.returncode == 0, err
            assert "Traceback" not in err
            assert CANARY_KEY not in err


def _refused(fake: FakeProvider, urls: list[str], api: str) -> tuple[int, int]:
    """REQUESTS requests split across ``urls``, all answered; the requests the provider
    saw and the 429s among them."""
    before = fake.stats()
    statuses = send(urls, REQUESTS, api=api)
    after = fake.stats()
    assert statuses == [200] * REQUESTS
    sent = after.requests - before.requests
    refused = after.by_status.get(429, 0) - before.by_status.get(429, 0)
    assert sent - refused == REQUESTS
    return sent, refused


def _align(fake: FakeProvider, url: str, api: str) -> None:
    """Requests one at a time through ``url`` until the provider refuses one or the
    limiter's burst is spent (its ``burst_s`` of RPM, and more). The configured bucket
    starts full, the provider's was used up; on a busy machine it may have refilled a
    little since. A 429 blocks the fleet's limiter and empties its buckets; a spent burst
    means the limiter paces below what the provider holds. Either way the limiter holds no
    more than the provider from here on."""
    refused = fake.stats().by_status.get(429, 0)
    for _ in range(2 * RPM // 60):
        assert send([url], 1, api=api, threads=1) == [200]
        if fake.stats().by_status.get(429, 0) > refused:
            return


def _limiter_state(location: StoreLocation, name: str) -> dict[str, float]:
    conn = RedisConnection(location)
    try:
        return RedisRateLimiter(name, conn).state()
    finally:
        conn.close()


def test_two_gateways_on_one_redis_hold_one_configured_limit_together(
    redis_location: StoreLocation, tmp_path: Path
) -> None:
    # Gemini answers carry no rate-limit headers: the configured 600 a minute is all the
    # gateways know. Each with a limiter of its own, they would send twice that.
    config = tmp_path / "backstay.yaml"
    limits = {"gemini": {"requests_per_minute": RPM, "burst_s": 1}}
    config.write_text(yaml.safe_dump({"retry": {"rate_limits": limits}}), encoding="utf-8")
    with _fleet(redis_location, "--config", str(config), api="gemini") as (fake, urls):
        _align(fake, urls[0], "gemini")
        sent, refused = _refused(fake, urls, "gemini")
    assert refused <= 0.05 * sent
    state = _limiter_state(redis_location, f"gemini/{GEMINI_MODEL}")
    assert state["n"] >= REQUESTS + 1  # both gateways reserved at the one limiter


@pytest.mark.slow
def test_two_gateways_on_one_redis_learn_one_limit_from_the_headers(
    redis_location: StoreLocation,
) -> None:
    with _fleet(redis_location) as (fake, urls):
        # One request teaches the fleet's limiter the limit (and that nothing is left).
        assert send(urls[:1], 1, threads=1) == [200]
        sent, refused = _refused(fake, urls, "anthropic")
    assert refused <= 0.05 * sent
    state = _limiter_state(redis_location, f"anthropic/{ANTHROPIC_MODEL}")
    assert state["n"] >= REQUESTS + 1
    assert state["r_rate"] == pytest.approx(RPM / 60.0)


def test_a_store_it_cannot_reach_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", MAIN, "gateway", "--port", "0", "--store", "redis://127.0.0.1:1/0"],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )
    assert done.returncode == 2
    assert "--store" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_state_directory_store_keeps_the_breakers_in_its_sqlite_file(tmp_path: Path) -> None:
    state = tmp_path / "state"
    scenario = Scenario(faults=(Fault(kind=FaultKind.OVERLOADED, first=1),))
    with FakeProvider(scenario) as fake:
        argv = [sys.executable, "-c", MAIN, "gateway", "--port", "0", "--upstream", fake.url]
        proc = subprocess.Popen(
            [*argv, "--store", str(state)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert send([_url_of(proc)], 1, threads=1) == [200]
        finally:
            err = _stop(proc)
    assert proc.returncode == 0, err
    stores = open_stores(StoreLocation.sqlite(state), state_dir=state)
    try:
        assert f"anthropic/{ANTHROPIC_MODEL}" in stores.breakers.names()
    finally:
        stores.close()
