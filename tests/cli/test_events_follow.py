"""``backstay events --follow`` prints what a running batch records and ends by itself
when the batch ends (no runner holds its tasks any more); on a finished batch it prints
the log and ends at once. A real batch in a subprocess, the follow in another."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Final

import pytest
from tests.cli.support import DONE, invoke, write_suite

# Generous bounds: the batch takes a second or two, the follow ends two looks after it.
WAIT_S: Final = 60.0
COMMAND: Final = [sys.executable, "-c", "from backstay.cli import main; main()"]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv("BACKSTAY_STORE", raising=False)


def test_follow_of_a_finished_batch_prints_it_and_ends(tmp_path: Path) -> None:
    assert invoke("batch", write_suite(tmp_path, ["a"]), "--state-dir", "s").exit_code == 0
    followed = invoke("events", "--state-dir", "s", "--follow")
    assert followed.exit_code == 0, followed.output
    assert "task.succeeded" in followed.output


def test_follow_ends_when_the_running_batch_ends(tmp_path: Path) -> None:
    slow = [[{"sleep": 1.5}, *DONE]]
    suite = write_suite(tmp_path, ["a", "b"], scenario=slow)
    batch = subprocess.Popen(
        [*COMMAND, "batch", str(suite), "--state-dir", "s", "--concurrency", "1"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    follow: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + WAIT_S
        while not (tmp_path / "s" / "events.jsonl").is_file():
            assert batch.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.05)
        follow = subprocess.Popen(
            [*COMMAND, "events", "--state-dir", "s", "--follow"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert batch.wait(timeout=WAIT_S) == 0
        out, err = follow.communicate(timeout=WAIT_S)
    finally:
        for proc in (batch, follow):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert follow.returncode == 0, err
    assert out.count("task.succeeded") == 2, out
