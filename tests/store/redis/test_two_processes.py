"""Two driver processes (two machines, as far as the limiter knows) share one Redis rate
limiter against one fake provider enforcing 600 requests a minute: together they keep to
the limit — at most 5 % of their calls see a 429, and the calls take no longer than
1.1 × M / R — and they pace as one line, not as two."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from backstay.fakeprovider import FakeProvider, Scenario
from backstay.fakeprovider.scenario import RateLimit
from backstay.store.location import StoreLocation

DRIVER = Path(__file__).with_name("limiter_driver.py")
RPM = 600
RATE_PER_S = RPM / 60.0


def _run_two(
    fake_url: str, location: StoreLocation, per_process: int, *extra: str
) -> list[dict[str, float]]:
    argv = [
        sys.executable, str(DRIVER), fake_url, "--requests", str(per_process),
        "--redis", location.url or "", *extra,
    ]  # fmt: skip
    children = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        return [json.loads(child.communicate(timeout=900)[0]) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=10)


def _wall_s(log: Path) -> float:
    times = [json.loads(line)["time"] for line in log.read_text(encoding="utf-8").splitlines()]
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
    limited = stats.by_fault.get("rate_limit_enforced", 0)
    print(f"{total} calls: {limited} 429s, {wall:.1f} s (ideal {total / RATE_PER_S:.0f} s)")
    assert sum(r["ok"] for r in results) == total
    assert limited <= 0.05 * total, stats
    assert wall <= 1.1 * total / RATE_PER_S


def test_two_processes_sharing_a_limiter_keep_to_the_providers_limit_and_pace_as_one(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    # A bucket of one second (10 calls), then 10 a second for both together: 60 calls take
    # about 5 s. Two limiters of their own would let 20 a second through, done in about 2 s.
    _shared_run(tmp_path, redis_location, 30, "--burst-s", "1")
    assert _wall_s(tmp_path / "requests.jsonl") >= 0.8 * (60 - 10) / RATE_PER_S


@pytest.mark.slow
def test_two_processes_sharing_a_limiter_keep_to_600_rpm_over_minutes(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    # 1400 calls: past the provider's own minute of burst, at the limit for two minutes.
    _shared_run(tmp_path, redis_location, 700, "--threads", "4")
