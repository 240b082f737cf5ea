"""Two ``backstay batch`` processes, each with a state directory of its own (two machines)
and one Redis store, run one batch together (each claims the tasks the other has not) and
share one client-side rate limit (``retry.rate_limits``
at 600 requests a minute) against one fake provider enforcing that same limit from an
empty bucket: together they keep to it — at most 5 % of their calls see a 429 — and take
no longer than 1.1 × M / R."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import httpx
import pytest
import yaml
from tests.adapters.support import CANARY_KEY

from backstay.cli._state import ALL_SUCCEEDED
from backstay.engine.suite_batch import BATCH_FILE, BatchIdentity
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.fakeprovider.scenario import RateLimit
from backstay.store.location import STORE_ENV_VAR, StoreLocation
from backstay.store.redis import RedisConnection, RedisTaskStore

WHEN: Final = dt.datetime(2026, 11, 26, tzinfo=dt.UTC)
KEY_VAR: Final = "PACED_TEST_ANTHROPIC_KEY"
MODEL: Final = "claude-haiku-4-5"
RPM: Final = 600
DRAIN_LIMIT: Final = 5_000
WAIT_S: Final = 120.0
# The batches' key: the provider keeps a bucket per key.
DRAIN_HEADERS: Final = {"x-api-key": CANARY_KEY, "anthropic-version": "2023-06-01"}
DRAIN_BODY: Final = {
    "model": MODEL,
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)
    monkeypatch.setenv(KEY_VAR, CANARY_KEY)


def _suite(tmp_path: Path, url: str, tasks: int) -> Path:
    suite: dict[str, Any] = {
        "suite": "paced",
        "defaults": {
            "adapter": "anthropic-api",
            "model": MODEL,
            "timeout_s": 20,
            "policy": {"extends": "agent_dispatch", "max_attempts": 5},
        },
        "adapters": {
            "anthropic-api": {"api_key_env": KEY_VAR, "base_url": url, "max_tokens": 8},
        },
        "tasks": [{"id": f"t{i:03d}", "prompt": "Say hi"} for i in range(tasks)],
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def _config(tmp_path: Path, rpm: int) -> Path:
    config = {"retry": {"rate_limits": {"anthropic": {"requests_per_minute": rpm, "burst_s": 1}}}}
    path = tmp_path / "backstay.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _keep_empty(fake: FakeProvider, rate_per_s: float, location: StoreLocation) -> None:
    """Use the provider's minute of burst up (requests until the first 429), and keep
    taking what it refills until the batches have recorded their tasks, a moment before
    their first calls: from then on M calls cannot take less than M / R, and every call
    beyond the rate is refused (the batches take seconds to start; their first calls
    must not find a bucket refilled meanwhile)."""
    conn = RedisConnection(location)
    try:
        _drain_until(fake, rate_per_s, lambda: bool(RedisTaskStore(conn).tasks()))
    finally:
        conn.close()


def _drain_until(fake: FakeProvider, rate_per_s: float, started: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    sent = 0
    with httpx.Client(base_url=fake.url, timeout=30.0) as client:
        for _ in range(DRAIN_LIMIT):
            sent += 1
            if (
                client.post("/v1/messages", json=DRAIN_BODY, headers=DRAIN_HEADERS).status_code
                == 429
            ):
                break
        else:
            raise AssertionError(
                f"the provider's bucket was not empty after {DRAIN_LIMIT} requests"
            )
        while fake.stats().requests == sent and not started():
            assert time.monotonic() < deadline, "the batches sent nothing"
            time.sleep(1.0 / rate_per_s)
            if fake.stats().requests == sent and not started():
                client.post("/v1/messages", json=DRAIN_BODY, headers=DRAIN_HEADERS)
                sent += 1


def _one_batch(tmp_path: Path, suite: Path) -> None:
    """Both machines' state directories name one batch (one run id): they share its tasks."""
    identity = BatchIdentity(suite="paced", run_id="20261126T000000Z-abcdef", created_at=WHEN)
    for name in "ab":
        state = tmp_path / f"machine-{name}"
        state.mkdir()
        text = json.dumps({**identity.to_dict(), "suite_file": str(suite)})
        (state / BATCH_FILE).write_text(text, encoding="utf-8")


def _batches(
    tmp_path: Path,
    suite: Path,
    config: Path,
    location: StoreLocation,
    *,
    fake: FakeProvider,
    rate_per_s: float,
) -> list[int]:
    """Both machines' batches started at once, against an emptied provider; their exit
    codes."""
    _one_batch(tmp_path, suite)
    logs = [tmp_path / f"machine-{name}.log" for name in "ab"]
    children = []
    for name, log in zip("ab", logs, strict=True):
        argv = [
            sys.executable, "-c", "from backstay.cli import main; main()",
            "batch", str(suite), "--state-dir", f"machine-{name}", "--store", str(location.url),
            "--config", str(config), "--concurrency", "8",
        ]  # fmt: skip
        with log.open("wb") as out:
            children.append(
                subprocess.Popen(
                    argv, cwd=tmp_path, env=_env_of_this_tree(), stdout=out, stderr=out
                )
            )
    try:
        _keep_empty(fake, rate_per_s, location)
        # The batches take M/R at the least: the bound is that plus WAIT_S of start-up.
        bound = WAIT_S + 1.2 * _tasks(suite) / rate_per_s
        codes = [child.wait(timeout=bound) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=10)
    for code, log in zip(codes, logs, strict=True):
        assert code == ALL_SUCCEEDED, log.read_text(encoding="utf-8")
        assert CANARY_KEY not in log.read_text(encoding="utf-8")
    return codes


def _env_of_this_tree() -> dict[str, str]:
    """The environment with this tree's ``src`` first on the path: the batches run the code
    under test (a relative ``PYTHONPATH`` means nothing in their working directory, and an
    installed backstay may be another tree's)."""
    src = Path(__file__).resolve().parents[2] / "src"
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
    }


def _tasks(suite: Path) -> int:
    return len(yaml.safe_load(suite.read_text(encoding="utf-8"))["tasks"])


def _calls(log: Path) -> list[dict[str, Any]]:
    """The batches' calls in the provider's request log (the drain's carry no key)."""
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [e for e in entries if e["path"] == "/v1/messages" and e["idempotency_key"]]


def _shared_batches(tmp_path: Path, location: StoreLocation, tasks: int, rpm: int = RPM) -> None:
    assert location.url is not None
    log = tmp_path / "requests.jsonl"
    config = _config(tmp_path, rpm)
    with FakeProvider(
        Scenario(rate_limit=RateLimit(requests_per_minute=rpm)), log_path=log
    ) as fake:
        suite = _suite(tmp_path, fake.url, tasks)
        _batches(tmp_path, suite, config, location, fake=fake, rate_per_s=rpm / 60.0)
    calls = _calls(log)
    limited = sum(1 for e in calls if e["status"] == 429)
    times = [float(e["time"]) for e in calls]
    wall = max(times) - min(times)
    served = {e["idempotency_key"] for e in calls if e["status"] == 200}
    print(f"{tasks} tasks: {len(calls)} calls, {limited} 429s, {wall:.1f} s")
    assert len(served) == tasks  # each task answered once, by one machine or the other
    assert limited <= 0.05 * len(calls)
    assert wall <= 1.1 * tasks / (rpm / 60.0)
    for name in "ab":  # both machines took part
        assert any((tmp_path / f"machine-{name}" / "runs").iterdir())


def test_two_batches_on_one_redis_store_keep_to_the_providers_rate_together(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    # 40 tasks at 120 a minute from the provider's empty bucket: 20 s for both machines
    # together (600 a minute: the slow test below). The limiter starts with its burst (2
    # requests at 120 a minute, burst_s 1) and cannot know that the provider's bucket was
    # emptied: its first two calls may both be refused, which 5 % of 20 calls would not
    # allow (the batches start within a second of recording their tasks, so the provider
    # refills little in between).
    _shared_batches(tmp_path, redis_location, 40, rpm=120)


@pytest.mark.slow
def test_two_batches_on_one_redis_store_keep_to_600_rpm_over_minutes(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    # 1200 tasks at 600 a minute from the provider's empty bucket: two minutes at the limit
    # (measured on the shared 2-core machine, load 0.7-2.7: 1200 calls, 0 429s, 118.6 s).
    _shared_batches(tmp_path, redis_location, 1200)
