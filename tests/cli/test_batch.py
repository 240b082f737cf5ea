"""``backstay batch`` and ``backstay resume``: a suite run durably in a state directory, each
attempt a real mock-agent subprocess, with exit codes saying what the batch came to."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.adapters.support import gone_within
from tests.cli.support import (
    DONE,
    dispatches,
    four_outcome_batch,
    invoke,
    states_of,
    status_json,
    write_suite,
)

from backstay.cli._state import ALL_SUCCEEDED, BUDGET_REACHED, SOME_FAILED, SOME_WAITING
from backstay.engine import BATCH_FILE
from backstay.store import STATE_FILE

CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
WAIT_S = 10.0


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)


def test_a_batch_with_tasks_left_waiting_exits_4_and_reports_each(tmp_path: Path) -> None:
    result, state = four_outcome_batch(tmp_path)
    assert result.exit_code == SOME_WAITING, result.output
    assert states_of(state) == {
        "ok/T0-run_01": "succeeded",
        "overflow/T0-run_01": "failed",
        "blocked/T0-run_01": "failed",  # content policy: failed, escalated for review
        "quota/T0-run_01": "paused",
    }
    lines = result.stdout.splitlines()
    assert any("ok/T0-run_01: succeeded after 1 attempt on mock/" in line for line in lines)
    assert any("overflow/T0-run_01: failed: context_limit exceeded" in line for line in lines)
    assert "4 tasks: 1 succeeded, 2 failed, 1 paused" in lines
    assert "Traceback" not in result.output


def test_a_batch_where_everything_succeeds_exits_0(tmp_path: Path) -> None:
    result = invoke("batch", write_suite(tmp_path, ["a", "b"]), "--state-dir", "state")
    assert result.exit_code == ALL_SUCCEEDED, result.output
    assert status_json(tmp_path / "state")["by_state"]["succeeded"] == 2


def test_a_batch_with_a_failed_task_and_none_waiting_exits_3(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ["a", "overflow"], scenarios={"overflow": [[{"exit": 3}]]})
    result = invoke("batch", suite, "--state-dir", "state", "--concurrency", "1")
    assert result.exit_code == SOME_FAILED, result.output


def test_a_batch_takes_retries_from_retry_budget_and_fails_a_task_it_refuses(
    tmp_path: Path,
) -> None:
    down = [{"error": "server_error"}]
    suite = write_suite(tmp_path, ["a"], scenarios={"a": [down, down, DONE]})
    config = tmp_path / "backstay.yaml"
    # No ratio, a floor of one retry in the window: the second retry is refused.
    config.write_text(
        "retry:\n  budget: {ratio: 0, min_retries_per_s: 0.1, window_s: 10}\n", encoding="utf-8"
    )
    result = invoke("batch", suite, "--state-dir", "state", "--config", config)
    assert result.exit_code == SOME_FAILED, result.output
    (task,) = status_json(tmp_path / "state")["tasks"]
    assert task["attempts"] == 2
    assert task["reason"].endswith("(retry_budget_exhausted)")


def test_each_run_works_in_its_own_copy_of_the_tasks_workspace(tmp_path: Path) -> None:
    template = tmp_path / "template"
    template.mkdir()
    (template / "README").write_text("read me", encoding="utf-8")
    suite = write_suite(
        tmp_path,
        ["a"],
        scenario=[[{"write_file": "out.txt", "text": "x"}, *DONE]],
        task_fields={"runs": 2, "workspace": "template"},
    )
    result = invoke("batch", suite, "--state-dir", "state")
    assert result.exit_code == ALL_SUCCEEDED, result.output
    for run in ("run_01", "run_02"):
        workspace = tmp_path / "state" / "runs" / "a" / "T0" / run / "workspace"
        assert sorted(p.name for p in workspace.iterdir()) == ["README", "out.txt"]
    assert sorted(p.name for p in template.iterdir()) == ["README"]


def test_running_a_batch_again_dispatches_nothing_that_finished(tmp_path: Path) -> None:
    first, state = four_outcome_batch(tmp_path)
    identity = (state / BATCH_FILE).read_text(encoding="utf-8")
    started = dispatches(tmp_path)
    again, _ = four_outcome_batch(tmp_path)
    assert (first.exit_code, again.exit_code) == (SOME_WAITING, SOME_WAITING)
    assert dispatches(tmp_path) == started == 4
    assert (state / BATCH_FILE).read_text(encoding="utf-8") == identity
    assert "started" not in again.stdout
    assert status_json(state)["attempts"] == 4


def test_a_state_directory_holds_the_batch_of_one_suite(tmp_path: Path) -> None:
    four_outcome_batch(tmp_path)
    other = write_suite(tmp_path, ["a"], name="other", file="other.yaml")
    result = invoke("batch", other, "--state-dir", "state")
    assert result.exit_code == 2
    assert "holds the batch of suite 'nightly'" in result.stderr
    assert "Traceback" not in result.output


def test_a_suite_with_problems_exits_2_and_creates_no_state(tmp_path: Path) -> None:
    suite = tmp_path / "bad.yaml"
    suite.write_text("suite: s\ntasks: [{id: a, prompt: hi, adapter: mok, model: m}]\n")
    result = invoke("batch", suite, "--state-dir", "state")
    assert result.exit_code == 2
    assert "unknown adapter 'mok'" in result.stderr
    assert not (tmp_path / "state").exists()


def test_an_unset_api_key_variable_exits_2_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MOCK_TEST_KEY", raising=False)
    suite = write_suite(tmp_path, ["a"], mock_options={"api_key_env": "MOCK_TEST_KEY"})
    result = invoke("batch", suite, "--state-dir", "state")
    assert result.exit_code == 2
    assert "MOCK_TEST_KEY is not set" in result.stderr
    assert not (tmp_path / "state").exists()
    assert dispatches(tmp_path) == 0


def test_a_concurrency_below_1_exits_2(tmp_path: Path) -> None:
    result = invoke("batch", write_suite(tmp_path, ["a"]), "--state-dir", "s", "--concurrency", "0")
    assert result.exit_code == 2


def test_a_state_directory_that_is_a_file_exits_2(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("", encoding="utf-8")
    result = invoke("batch", write_suite(tmp_path, ["a"]), "--state-dir", "state")
    assert result.exit_code == 2
    assert result.stderr == "error: --state-dir: state is a file, not a state directory\n"
    assert "Traceback" not in result.output


def test_resume_without_a_batch_exits_2(tmp_path: Path) -> None:
    result = invoke("resume", "--state-dir", tmp_path / "nowhere")
    assert result.exit_code == 2
    assert "no batch ran there" in result.stderr


# -- a batch killed with SIGKILL, then resumed ---------------------------------------------


def _succeeded(state: Path) -> int:
    uri = f"file:{state / STATE_FILE}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            query = "SELECT count(*) FROM backstay_tasks WHERE state = 'succeeded'"
            return int(conn.execute(query).fetchone()[0])
    except sqlite3.Error:  # not created yet
        return 0


def _descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    found, frontier = [], [pid]
    while frontier:
        kids = [child for child, parent in parents.items() if parent == frontier[-1]]
        frontier.pop()
        found += kids
        frontier += kids
    return found


def _kill_9(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the batch; then its agents, orphaned by the kill, by process group."""
    os.kill(proc.pid, signal.SIGSTOP)  # frozen: it starts no agent while we look
    agents = _descendants(proc.pid)
    groups = set()
    for pid in agents:
        with contextlib.suppress(ProcessLookupError):
            groups.add(os.getpgid(pid))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=5)
    for group in groups - {os.getpgid(0)}:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
    assert all(gone_within(pid) for pid in agents)


def test_a_batch_killed_mid_run_is_finished_by_resume(tmp_path: Path) -> None:
    tasks = ["a", "b", "c", "d"]
    suite = write_suite(tmp_path, tasks, scenario=[[{"sleep": 0.4}, *DONE]])
    state = tmp_path / "state"
    args = ["batch", str(suite), "--state-dir", str(state), "--concurrency", "2"]
    command = [sys.executable, "-c", "from backstay.cli import main; main()", *args]
    # A short claim: the resume takes the killed runner's tasks over within a second.
    command += ["--lease-ttl", "1"]
    with (tmp_path / "batch.log").open("wb") as log:
        proc = subprocess.Popen(command, cwd=tmp_path, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + WAIT_S
        while _succeeded(state) < 1:
            assert proc.poll() is None, (tmp_path / "batch.log").read_text()
            assert time.monotonic() < deadline, "no task succeeded in time"
            time.sleep(0.01)
        _kill_9(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
    assert proc.returncode == -signal.SIGKILL
    assert 1 <= _succeeded(state) < len(tasks)
    result = invoke("resume", "--state-dir", state, "--lease-ttl", "1")
    assert result.exit_code == ALL_SUCCEEDED, result.output
    assert set(states_of(state).values()) == {"succeeded"}
    # Each task ran once, or twice when the kill cut its first attempt short.
    assert len(tasks) <= status_json(state)["attempts"] <= len(tasks) + 2
    assert dispatches(tmp_path) <= status_json(state)["attempts"]


def test_the_exit_codes_are_documented() -> None:
    text = CLI_DOC.read_text(encoding="utf-8")
    for code in (ALL_SUCCEEDED, SOME_FAILED, SOME_WAITING, BUDGET_REACHED):
        assert f"| `{code}` |" in text
    for command in ("backstay batch", "backstay resume", "backstay status", "escalations"):
        assert command in text


def test_resume_runs_nothing_while_every_task_has_finished_or_waits(tmp_path: Path) -> None:
    _, state = four_outcome_batch(tmp_path)
    result = invoke("resume", "--state-dir", state)
    assert result.exit_code == SOME_WAITING, result.output
    assert dispatches(tmp_path) == 4
    assert "2 open escalations: backstay escalations list" in result.stdout
