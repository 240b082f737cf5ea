"""``backstay batch/resume --executor ray`` on a real Ray cluster (127.0.0.1), each run an
Anthropic SDK call to the fake provider: every run once, recorded in the store by the
workers, the batch's concurrency held across them; a killed worker and a killed driver
lose nothing and run nothing finished again (the provider's request log is the witness)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Final

from tests.adapters.support import CANARY_KEY
from tests.executors.ray_support import (
    KEY_VAR,
    RayCluster,
    backstay,
    count,
    epoch,
    served,
    succeeded_at,
    tasks,
    write_suite,
)

from backstay.events import EVENTS_FILE
from backstay.fakeprovider import FakeProvider, Scenario, parse_fault
from backstay.store import STATE_FILE
from backstay.store.location import StoreLocation

SLOW: Final = Scenario(faults=(parse_fault("slow:delay_s=0.2"),))
SUCCEEDED: Final = "SELECT count(*) FROM backstay_tasks WHERE state = 'succeeded'"
WAIT_S: Final = 240.0  # generous: the 2-core machine is shared


def _wait(proc: subprocess.Popen[bytes], log: Path) -> int:
    try:
        return proc.wait(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise AssertionError(f"backstay did not finish: {log.read_text()[-3000:]}") from None


def _until(
    state: Path, query: str, at_least: int, proc: subprocess.Popen[bytes], log: Path
) -> None:
    deadline = time.monotonic() + WAIT_S
    while count(state, query) < at_least:
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.02)


def _max_overlap(state: Path) -> int:
    """The most attempts that were running at one moment."""
    with contextlib.closing(sqlite3.connect(state / STATE_FILE)) as conn:
        rows = conn.execute("SELECT started_at, ended_at FROM backstay_attempts").fetchall()
    edges = []
    for started, ended in rows:
        edges += [(epoch(started), 1), (epoch(ended), -1)]
    running = most = 0
    for _, step in sorted(edges, key=lambda edge: (edge[0], edge[1])):
        running += step
        most = max(most, running)
    return most


def test_a_batch_runs_each_run_once_on_the_cluster_within_its_concurrency(
    ray_head: RayCluster, tmp_path: Path
) -> None:
    log, out = tmp_path / "requests.jsonl", tmp_path / "out.log"
    with FakeProvider(SLOW, log_path=log) as fake:
        suite = write_suite(tmp_path, fake.url, 8)
        proc = backstay(
            "batch", suite, "--state-dir", "state", "--concurrency", "2",
            "--executor", "ray", "--ray-address", ray_head.address,
            env=ray_head.env, cwd=tmp_path, log=out,
        )  # fmt: skip
        code = _wait(proc, out)
    output = out.read_text()
    assert code == 0, output
    state = tmp_path / "state"
    assert set(tasks(state).values()) == {"succeeded"}
    keys = [entry["idempotency_key"] for entry in served(log)]
    assert sorted(keys) == sorted(tasks(state))  # each run dispatched exactly once
    # The cluster has 4 CPUs; the batch's --concurrency 2 holds across its workers.
    assert _max_overlap(state) <= 2
    # Each worker recorded its task's events in the state directory's event log.
    events = [json.loads(line) for line in (state / EVENTS_FILE).read_text().splitlines()]
    assert sum(e["event"] == "task.succeeded" for e in events) == 8
    assert "8 tasks: 8 succeeded" in output
    assert CANARY_KEY not in output
    assert CANARY_KEY not in (state / EVENTS_FILE).read_text()


def test_a_killed_worker_and_a_killed_driver_lose_no_run_and_rerun_no_finished_one(
    ray_head: RayCluster, tmp_path: Path
) -> None:
    log, out = tmp_path / "requests.jsonl", tmp_path / "out.log"
    state = tmp_path / "state"
    ray = ("--executor", "ray", "--ray-address", ray_head.address, "--lease-ttl", "5")
    with FakeProvider(SLOW, log_path=log) as fake:
        suite = write_suite(tmp_path, fake.url, 40)
        proc = backstay(
            "batch", suite, "--state-dir", "state", "--concurrency", "4", *ray,
            env=ray_head.env, cwd=tmp_path, log=out,
        )  # fmt: skip
        _until(state, SUCCEEDED, 5, proc, out)
        busy = ray_head.busy_workers()
        assert busy, "no worker was driving a run"
        os.kill(busy[0], signal.SIGKILL)
        _until(state, SUCCEEDED, 12, proc, out)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert count(state, SUCCEEDED) < 40
        resumed = backstay(
            "resume", "--state-dir", "state", *ray, env=ray_head.env, cwd=tmp_path, log=out
        )
        code = _wait(resumed, out)
    output = out.read_text()
    assert code == 0, output
    assert "its worker was lost (WorkerCrashedError" in output
    states = tasks(state)
    assert len(states) == 40
    assert set(states.values()) == {"succeeded"}  # 0 lost
    done_at = succeeded_at(state)
    assert len(done_at) == 40  # one succeeded attempt per run
    requests = served(log)
    assert {entry["idempotency_key"] for entry in requests} == set(states)
    # 0 finished runs dispatched again: no request for a run after its success was recorded.
    late = [e for e in requests if e["time"] > done_at[e["idempotency_key"]]]
    assert late == []
    assert CANARY_KEY not in output


def test_a_secret_missing_on_the_workers_stops_the_batch_with_exit_2_naming_it(
    ray_head: RayCluster, tmp_path: Path
) -> None:
    out = tmp_path / "out.log"
    with FakeProvider(SLOW) as fake:
        suite = write_suite(tmp_path, fake.url, 2)
        text = suite.read_text().replace(KEY_VAR, "ONLY_ON_THE_DRIVER_KEY")
        suite.write_text(text)
        proc = backstay(
            "batch", suite, "--state-dir", "state", "--executor", "ray",
            "--ray-address", ray_head.address,
            env={**ray_head.env, "ONLY_ON_THE_DRIVER_KEY": CANARY_KEY}, cwd=tmp_path, log=out,
        )  # fmt: skip
        code = _wait(proc, out)
        requests = fake.stats().requests
    output = out.read_text()
    assert code == 2, output
    assert "needs ONLY_ON_THE_DRIVER_KEY" in output
    assert "Traceback" not in output
    assert CANARY_KEY not in output
    assert requests == 0
    assert set(tasks(tmp_path / "state").values()) == {"pending"}  # recorded, not lost


def test_workers_record_the_batch_in_a_shared_redis_store(
    ray_head: RayCluster, redis_location: StoreLocation, tmp_path: Path
) -> None:
    log, out = tmp_path / "requests.jsonl", tmp_path / "out.log"
    url = redis_location.url
    assert url is not None
    with FakeProvider(SLOW, log_path=log) as fake:
        suite = write_suite(tmp_path, fake.url, 6)
        proc = backstay(
            "batch", suite, "--state-dir", "state", "--concurrency", "2", "--store", url,
            "--executor", "ray", "--ray-address", ray_head.address,
            env=ray_head.env, cwd=tmp_path, log=out,
        )  # fmt: skip
        code = _wait(proc, out)
    output = out.read_text()
    assert code == 0, output
    # Nothing went to a local state file: the workers wrote the records to Redis ...
    assert not (tmp_path / "state" / STATE_FILE).exists()
    # ... where another directory (as another machine) reads them.
    status = tmp_path / "status.log"
    shown = backstay(
        "status", "--state-dir", "elsewhere", "--store", url, "--json",
        env=ray_head.env, cwd=tmp_path, log=status,
    )  # fmt: skip
    assert _wait(shown, status) == 0, status.read_text()
    text = status.read_text()  # the store's settings warnings first, on stderr
    states = {t["run"]: t["state"] for t in json.loads(text[text.index("{") :])["tasks"]}
    assert sorted(states.values()) == ["succeeded"] * 6
    keys = [entry["idempotency_key"] for entry in served(log)]
    assert len(keys) == len(set(keys)) == 6  # each run dispatched exactly once
    assert CANARY_KEY not in output
