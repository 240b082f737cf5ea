"""Two driver processes (two machines, as far as the limiter knows) share one Redis rate
limiter against one fake provider enforcing 600 requests a minute: together they keep to
the limit — at most 5 % of their calls see a 429, and the calls take no longer than
1.1 × M / R, counted from the provider's empty bucket."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from backstay.fakeprovider import FakeProvider, Scenario
from backstay.fakeprovider.scenario import RateLimit
from backstay.store.location import StoreLocation

DRIVER = Path(__file__).with_name("limiter_driver.py")
RPM = 600
RATE_PER_S = RPM / 60.0
DRAIN_LIMIT = 5_000
HEADERS = {"x-api-key": "test-key", "anthropic-version": "2023-06-01"}
BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


def _run_two(
    fake_url: str, location: StoreLocation, per_process: int, *extra: str
) -> list[dict[str, float]]:
    argv = [
        sys.executable, str(DRIVER), fake_url, "--requests", str(per_process),
        "--redis", location.url or "", "--wait-go", *extra,
    ]  # fmt: skip
    children = [
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        for child in children:  # both set up before either starts: as two running machines
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
        _drain(fake_url)
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        return [json.loads(child.communicate(timeout=900)[0]) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=10)


def _drain(url: str) -> None:
    """Use the provider's minute of burst up (requests until the first 429): from then on
    M calls cannot take less than M / R, and every call beyond the rate is refused."""
    with httpx.Client(base_url=url, timeout=30.0) as client:
        for _ in range(DRAIN_LIMIT):
            if client.post("/v1/messages", json=BODY, headers=HEADERS).status_code == 429:
                return
    raise AssertionError(f"the provider's bucket was not empty after {DRAIN_LIMIT} requests")


def _calls(log: Path) -> list[dict[str, object]]:
    """The drivers' calls in the provider's request log (after the drain's)."""
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [e for e in entries if e["idempotency_key"] is not None]


def _wall_s(log: Path) -> float:
    times = [float(str(e["time"])) for e in _calls(log)]
    return max(times) - min(times)


def _shared_run(tmp_path: Path, location: StoreLocation, per_process: int, *extra: str) -> None:
    log = tmp_path / "requests.jsonl"
    with FakeProvider(
        Scenario(rate_limit=RateLimit(requests_per_minute=RPM)), log_path=log
    ) as fake:
        results = _run_two(fake.url, location, per_process, "--rpm", str(RPM), *extra)
        stats = fake.stats()
    total = 2 * per_process
    wall = _wall_s(log)
    limited = sum(1 for e in _calls(log) if e["status"] == 429)
    print(f"{total} calls: {limited} 429s, {wall:.1f} s (ideal {total / RATE_PER_S:.0f} s)")
    assert sum(r["ok"] for r in results) == total
    assert limited <= 0.05 * total, stats.by_fault
    assert wall <= 1.1 * total / RATE_PER_S


def test_two_processes_sharing_a_limiter_keep_to_the_providers_limit_and_pace_as_one(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    # From the provider's empty bucket: 80 calls at 10 a second for both together. Two
    # limiters of their own would send 20 a second and see about half of them refused.
    _shared_run(tmp_path, redis_location, 40, "--burst-s", "1", "--threads", "1")


@pytest.mark.slow
def test_two_processes_sharing_a_limiter_keep_to_600_rpm_over_minutes(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    # 1400 calls from the provider's empty bucket: at the limit for more than two minutes.
    _shared_run(tmp_path, redis_location, 700, "--threads", "4")
