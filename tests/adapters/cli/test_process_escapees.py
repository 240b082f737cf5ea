"""run_process and the processes that leave the agent's process group (``setsid``): killed
when the run ends, and a descendant holding the pipes open holds up neither the run nor
the end of its event loop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.adapters.support import alive, gone_within, python, spawned_pids

from backstay.adapters.capture import Capture, Stream
from backstay.adapters.cli.process import run_process_sync

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/environ").exists(), reason="needs /proc to find escaped processes"
)

# Starts a grandchild in a session of its own (it leaves the agent's process group)
# that keeps the agent's stdout, announces it, and exits at once.
LEAVE_THE_GROUP = """
import subprocess, sys
child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True{env}
)
print("spawned", child.pid, flush=True)
"""


@pytest.fixture
def capture(tmp_path: Path) -> Iterator[Capture]:
    with Capture(tmp_path / "out") as cap:
        yield cap


def _kill(pids: list[int]) -> None:
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_process_that_left_the_group_is_killed_when_the_run_ends(capture: Capture) -> None:
    started = time.monotonic()
    outcome = run_process_sync(
        python(LEAVE_THE_GROUP.format(env="")),
        cwd=capture.output_dir,
        env={},
        timeout_s=10.0,
        capture=capture,
    )
    pids = spawned_pids(capture.path(Stream.STDOUT))
    try:
        assert outcome.exit_code == 0
        assert len(pids) == 1
        assert gone_within(pids[0])
        assert time.monotonic() - started < 4.0  # its pipes closed with it: no drain wait
        log = capture.path(Stream.AGENT).read_text()
        assert f"that had left process group {outcome.pid}: {pids[0]}" in log
    finally:
        _kill(pids)


def test_an_escaped_process_is_killed_with_its_own_process_group(capture: Capture) -> None:
    # The escaped leader starts a child in its group and clears that child's environment:
    # the child carries no tag, but goes with its group.
    code = """
import subprocess, sys
leader = subprocess.Popen([sys.executable, "-c", '''
import subprocess, sys, time
c = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env={})
print("spawned", c.pid, flush=True)
time.sleep(600)
'''], start_new_session=True)
print("spawned", leader.pid, flush=True)
import time; time.sleep(1.0)
"""
    run_process_sync(python(code), cwd=capture.output_dir, env={}, timeout_s=10.0, capture=capture)
    pids = spawned_pids(capture.path(Stream.STDOUT))
    try:
        assert len(pids) == 2
        assert all(gone_within(pid) for pid in pids)
    finally:
        _kill(pids)


def test_an_untagged_descendant_holding_stdout_delays_the_end_only_by_the_drain_limit(
    tmp_path: Path,
) -> None:
    # Left the group and cleared its environment: nothing finds it, and it keeps stdout.
    # The run still ends (the drain limit, shortened here), the pipes are closed before
    # the loop, and nothing is printed about an event loop that is closed.
    marker = f"{uuid.uuid4().hex}"
    script = textwrap.dedent(
        f"""
        import gc, sys, time
        import backstay.adapters.cli.process as process
        from backstay.adapters.capture import Capture
        process._DRAIN_S = 0.5
        with Capture({str(tmp_path / "out")!r}) as capture:
            started = time.monotonic()
            outcome = process.run_process_sync(
                {python(LEAVE_THE_GROUP.format(env=", env={}"))!r},
                cwd={str(tmp_path)!r}, env={{}}, timeout_s=10.0, capture=capture,
            )
            print("took", time.monotonic() - started, "exit", outcome.exit_code, flush=True)
        gc.collect()
        print({marker!r}, flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    pids = spawned_pids(tmp_path / "out" / "stdout.log")
    try:
        assert done.returncode == 0, done.stderr
        assert marker in done.stdout
        took = float(done.stdout.split()[1])
        assert took < 3.0, done.stdout
        assert "Event loop is closed" not in done.stderr
        assert "Traceback" not in done.stderr
        assert "unclosed transport" not in done.stderr
        assert len(pids) == 1
    finally:
        _kill(pids)
