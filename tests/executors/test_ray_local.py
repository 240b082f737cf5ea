"""``backstay batch --executor ray`` without an address: a local Ray cluster started for
the batch, listening on 127.0.0.1 only, and gone with every process of it afterwards."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Final

from tests.adapters.support import CANARY_KEY
from tests.executors.ray_support import (
    backstay,
    count,
    listening_addresses,
    process_env,
    served,
    session_processes,
    tasks,
    write_suite,
)

from backstay.fakeprovider import FakeProvider, Scenario, parse_fault

# 127.0.0.1, ::1 and ::ffff:127.0.0.1 as /proc/net/tcp* write them.
LOOPBACK: Final = {
    "0100007F",
    "00000000000000000000000001000000",
    "0000000000000000FFFF00000100007F",
}
STARTED: Final = "SELECT count(*) FROM backstay_attempts"
WAIT_S: Final = 240.0


def test_a_batch_starts_a_loopback_only_cluster_and_leaves_no_process(tmp_path: Path) -> None:
    log, out, state = tmp_path / "requests.jsonl", tmp_path / "out.log", tmp_path / "state"
    scenario = Scenario(faults=(parse_fault("slow:delay_s=1"),))
    with FakeProvider(scenario, log_path=log) as fake:
        suite = write_suite(tmp_path, fake.url, 3)
        proc = backstay(
            "batch", suite, "--state-dir", "state", "--executor", "ray",
            env=process_env(), cwd=tmp_path, log=out,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + WAIT_S
            while count(state, STARTED) == 0:  # a run in flight: the cluster is up
                assert proc.poll() is None, out.read_text()[-3000:]
                assert time.monotonic() < deadline, out.read_text()[-3000:]
                time.sleep(0.05)
            cluster = session_processes(proc.pid)
            assert len(cluster) > 3  # the driver, gcs_server, raylet, workers…
            assert listening_addresses(cluster) <= LOOPBACK
            code = proc.wait(timeout=WAIT_S)
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
    output = out.read_text()
    assert code == 0, output
    assert set(tasks(state).values()) == {"succeeded"}
    assert len(served(log)) == 3
    assert CANARY_KEY not in output
    deadline = time.monotonic() + 20
    while session_processes(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = session_processes(proc.pid)
    for pid in left:  # stopped by PID whatever happens, then reported
        os.kill(pid, signal.SIGKILL)
    assert left == [], "ray.shutdown() left processes running"
