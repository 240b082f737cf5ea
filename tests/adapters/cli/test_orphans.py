"""Left-over agent processes: found by the attempt tag in their environment, and killed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.adapters.support import gone_within

from backstay.adapters.cli.orphans import ATTEMPT_TAG, attempt_tag, stop_tagged, tagged_processes

SLEEP_WITH_CHILD = (
    "import subprocess, sys, time;"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
    "time.sleep(60)"
)


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=5)


def _start(procs: list[subprocess.Popen[bytes]], tag: str | None) -> subprocess.Popen[bytes]:
    env = {"PATH": os.environ.get("PATH", "")}
    if tag is not None:
        env[ATTEMPT_TAG] = tag
    proc = subprocess.Popen(
        [sys.executable, "-c", SLEEP_WITH_CHILD], env=env, start_new_session=True
    )
    procs.append(proc)
    return proc


def _wait_for(tag: str, count: int) -> list[int]:
    for _ in range(250):  # up to 5 s for the child's own child to start
        found = tagged_processes(tag)
        if len(found) >= count:
            return found
        time.sleep(0.02)
    raise AssertionError(f"{count} tagged processes never appeared")


def test_the_tag_is_the_absolute_attempt_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert attempt_tag("runs/t/a") == str(tmp_path / "runs" / "t" / "a")


def test_an_agent_and_its_children_are_found_by_their_tag_and_killed(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    tag = str(tmp_path / "attempt_1")
    agent = _start(started, tag)
    found = _wait_for(tag, 2)  # the agent and the child it spawned
    assert agent.pid in found
    assert sorted(stop_tagged(tag)) == found
    assert all(gone_within(pid) for pid in found)
    assert tagged_processes(tag) == []


def test_processes_of_other_attempts_are_left_alone(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    mine, other = str(tmp_path / "attempt_1"), str(tmp_path / "attempt_10")
    _start(started, mine)
    neighbour = _start(started, other)
    untagged = _start(started, None)
    _wait_for(mine, 2)
    _wait_for(other, 2)
    stop_tagged(mine)
    assert neighbour.poll() is None
    assert untagged.poll() is None
    assert len(tagged_processes(other)) == 2


def test_without_proc_nothing_is_found(tmp_path: Path) -> None:
    assert tagged_processes("x", proc_root=tmp_path / "missing") == []
