"""ProcessWatch finds what a run left behind: the contract's process check can fail."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from backstay.testing._processes import MARKER_VARIABLE, ProcessWatch, proc_available

pytestmark = pytest.mark.skipif(not proc_available(), reason="needs /proc")

# A leader that starts a grandchild sleeping 30 s, prints its pid, then waits to be killed.
LEADER = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(30)\n"
)


@pytest.fixture
def started() -> Iterator[list[int]]:
    """Pids this test started; whatever survives the test is killed."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _noticed(watch: ProcessWatch, pid: int) -> bool:
    """Whether the watch's poller sees ``pid`` within 2 s (a real agent runs longer than
    one poll; these leaders are killed at once, so the test waits to be seen)."""
    deadline = time.monotonic() + 2.0
    while pid not in watch.seen:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _leader(env: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", LEADER],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    assert proc.stdout is not None
    grandchild = int(proc.stdout.readline())
    proc.stdout.close()  # nothing more is read
    return proc, grandchild


def test_a_grandchild_outliving_its_killed_leader_is_a_leftover(started: list[int]) -> None:
    with ProcessWatch() as watch:
        proc, grandchild = _leader({"PATH": os.environ.get("PATH", "")})
        started.append(grandchild)
        assert _noticed(watch, proc.pid)
        proc.kill()  # the leader only, as a careless adapter would
        proc.wait()
    assert [p.pid for p in watch.leftovers(wait_s=0.2)] == [grandchild]


def test_a_process_carrying_the_marker_is_a_leftover(started: list[int]) -> None:
    with ProcessWatch() as watch:
        pass  # started after the watch closed: only the marker ties it to the run
    proc, grandchild = _leader({MARKER_VARIABLE: watch.marker})
    started.extend([proc.pid, grandchild])
    found = {p.pid for p in watch.leftovers(wait_s=0.2)}
    assert found == {proc.pid, grandchild}
    proc.kill()
    proc.wait()


def test_a_whole_group_killed_leaves_nothing(started: list[int]) -> None:
    with ProcessWatch() as watch:
        proc, grandchild = _leader({"PATH": os.environ.get("PATH", "")})
        started.append(grandchild)
        assert _noticed(watch, proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert watch.leftovers() == []
