"""A real ``backstay batch`` of an agent CLI that leaves processes behind it: one in its
process group and one in a session of its own holding its stdout (``setsid cmd &``).
The batch succeeds, nothing of either is left afterwards, and nothing is printed about
an event loop that was closed under an open pipe."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Final

import pytest

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/environ").exists(), reason="needs /proc to find escaped processes"
)

BACKSTAY: Final = [sys.executable, "-c", "from backstay.cli import main; main()"]
TASKS: Final = 3
# A Claude Code stand-in: its version, then the prompt read from stdin (kept aside to be
# checked), two sleepers left behind, and a successful stream-json result.
FAKE_CLAUDE: Final = """#!/bin/sh
if [ "$1" = "--version" ]; then echo '2.1.197 (Claude Code)'; exit 0; fi
cat > "$BACKSTAY_ATTEMPT_DIR/../prompt-seen.txt"
sleep {in_group} &
setsid sleep {escaped} &
echo '{{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"ok"}}'
"""


def _matching(pattern: str) -> list[int]:
    done = subprocess.run(
        ["pgrep", "-f", pattern], capture_output=True, text=True, timeout=10, check=False
    )
    return [int(pid) for pid in done.stdout.split()]


def _gone(pattern: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    for _ in range(int(seconds / 0.05) + 1):
        if not _matching(pattern) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return not _matching(pattern)


def test_a_batch_leaves_no_escaped_process_and_prints_no_loop_error(tmp_path: Path) -> None:
    # Unique durations: pgrep finds exactly this test's sleepers.
    salt = uuid.uuid4().int % 10_000
    in_group, escaped = f"601.{salt:04d}1", f"601.{salt:04d}2"
    binary = tmp_path / "fake" / "claude"
    binary.parent.mkdir()
    binary.write_text(FAKE_CLAUDE.format(in_group=in_group, escaped=escaped))
    binary.chmod(0o755)
    suite = tmp_path / "suite.yaml"
    tasks = "\n".join(f"  - {{id: t{i}, prompt: 'secret prompt {i}'}}" for i in range(TASKS))
    suite.write_text(
        "suite: leftovers\n"
        "defaults: {adapter: claude-code, model: claude-sonnet-4-5}\n"
        f"adapters:\n  claude-code: {{binary: {binary}}}\n"
        f"tasks:\n{tasks}\n"
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "ANTHROPIC_API_KEY": "k",
    }
    env |= {name: os.environ[name] for name in ("PYTHONPATH",) if name in os.environ}
    try:
        done = subprocess.run(
            [*BACKSTAY, "batch", str(suite), "--state-dir", str(tmp_path / "state")],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"{TASKS} tasks: {TASKS} succeeded" in done.stdout
        assert "Event loop is closed" not in done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        assert _gone(escaped, 5.0), f"left behind: {_matching(escaped)}"
        assert _gone(in_group, 5.0), f"left behind: {_matching(in_group)}"
        seen = sorted(p.read_text() for p in (tmp_path / "state").rglob("prompt-seen.txt"))
        assert seen == [f"secret prompt {i}" for i in range(TASKS)]
    finally:
        for pid in _matching(escaped) + _matching(in_group):
            os.kill(pid, signal.SIGKILL)
