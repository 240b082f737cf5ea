"""Chaos on a real Ray cluster: ``kill -9`` of Ray workers and of the driver, round after
round, during a batch of 60 Anthropic SDK runs against the fake provider, then the head's
raylet (the node), then ``backstay resume`` on a new cluster: no run is lost and no
finished run is dispatched again — the fake provider's request log is the witness.

Slow (minutes on 2 cores): ``make test-all`` runs it, or
``pytest -m slow tests/executors/test_ray_chaos.py``."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Final

import pytest
from tests.adapters.support import CANARY_KEY
from tests.executors.ray_support import (
    RayCluster,
    backstay,
    count,
    ray_cluster,
    served,
    succeeded_at,
    tasks,
    write_suite,
)

from backstay.fakeprovider import FakeProvider, Scenario, parse_fault

RUNS: Final = 60
ROUNDS: Final = 10
SCENARIO: Final = Scenario(faults=(parse_fault("slow:delay_s=0.3"),))
SUCCEEDED: Final = "SELECT count(*) FROM backstay_tasks WHERE state = 'succeeded'"
INTERRUPTED: Final = "SELECT count(*) FROM backstay_attempts WHERE outcome = 'interrupted'"
WAIT_S: Final = 300.0


def _progress(state: Path, beyond: int, proc: subprocess.Popen[bytes], log: Path) -> bool:
    """Wait until more than ``beyond`` runs succeeded; ``False`` if the driver finished."""
    deadline = time.monotonic() + WAIT_S
    while count(state, SUCCEEDED) <= beyond:
        if proc.poll() is not None:
            return False
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.02)
    return True


def _kill_driver(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def _rounds(cluster: RayCluster, tmp: Path, state: Path, log: Path) -> tuple[int, int]:
    """Kill a busy worker and then the driver, ``ROUNDS`` times; the kills made."""
    draw = random.Random(12)
    ray = ("--executor", "ray", "--ray-address", cluster.address, "--lease-ttl", "5")
    command: tuple[str | Path, ...] = ("batch", tmp / "suite.yaml", "--state-dir", "state", *ray)
    workers = drivers = 0
    for _ in range(ROUNDS):
        proc = backstay(*command, "--concurrency", "4", env=cluster.env, cwd=tmp, log=log)
        command = ("resume", "--state-dir", "state", *ray)
        try:
            if not _progress(state, count(state, SUCCEEDED), proc, log):
                break
            busy = cluster.busy_workers()
            if busy:
                os.kill(draw.choice(busy), signal.SIGKILL)
                workers += 1
            time.sleep(draw.uniform(0.0, 0.6))
        finally:
            if proc.poll() is None:
                _kill_driver(proc)
                drivers += 1
    return workers, drivers


@pytest.mark.slow
def test_kill_9_of_workers_driver_and_node_then_resume_loses_nothing_reruns_nothing(
    tmp_path: Path,
) -> None:
    log, out, state = tmp_path / "requests.jsonl", tmp_path / "out.log", tmp_path / "state"
    with FakeProvider(SCENARIO, log_path=log) as fake:
        write_suite(tmp_path, fake.url, RUNS)
        with ray_cluster() as cluster:
            workers, drivers = _rounds(cluster, tmp_path, state, out)
            # The node: its raylet killed under a running resume, which then says so.
            ray = ("--executor", "ray", "--ray-address", cluster.address, "--lease-ttl", "5")
            proc = backstay(
                "resume", "--state-dir", "state", *ray, env=cluster.env, cwd=tmp_path, log=out
            )
            assert _progress(state, count(state, SUCCEEDED), proc, out)
            os.kill(cluster.raylet(), signal.SIGKILL)
            node_code = proc.wait(timeout=WAIT_S)
        assert count(state, SUCCEEDED) < RUNS
        with ray_cluster() as fresh:  # another cluster takes the batch up
            ray = ("--executor", "ray", "--ray-address", fresh.address, "--lease-ttl", "5")
            proc = backstay(
                "resume", "--state-dir", "state", *ray, env=fresh.env, cwd=tmp_path, log=out
            )
            code = proc.wait(timeout=WAIT_S)
    output = out.read_text()
    assert workers >= ROUNDS
    assert drivers >= ROUNDS
    assert node_code == 4, output  # the cluster was lost: tasks wait for a resume
    assert "the Ray cluster" in output
    assert code == 0, output
    states = tasks(state)
    assert len(states) == RUNS
    assert set(states.values()) == {"succeeded"}  # 0 lost
    assert count(state, INTERRUPTED) >= 1  # kills did land mid-run
    done_at = succeeded_at(state)
    assert len(done_at) == RUNS  # exactly one succeeded attempt per run
    requests = served(log)
    assert {entry["idempotency_key"] for entry in requests} == set(states)
    late = [e for e in requests if e["time"] > done_at[e["idempotency_key"]]]
    assert late == []  # 0 finished runs dispatched again
    assert CANARY_KEY not in output
