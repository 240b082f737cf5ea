"""Faults of the state directory, through the real command line in a subprocess: a
damaged page, an emptied or deleted ``state.sqlite``, a ``-wal`` file lost after a kill,
a deleted or non-UTF-8 ``batch.json``, a non-UTF-8 event log, a read-only file system
and a full one. Each ends with its exit code and one ``error:`` line naming the file and
the cause, never a traceback or a "Task exception was never retrieved"; records that
are gone are never taken for an empty batch (nothing runs again), and what was recorded
stays resumable."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import pytest
from tests.cli.support import write_suite
from tests.mounts import in_mount_namespace, needs_mounts

from backstay.cli._state import ALL_SUCCEEDED, FILE_SYSTEM_FAULT
from backstay.engine import BATCH_FILE, Engine
from backstay.store import STATE_FILE

BACKSTAY: Final = [sys.executable, "-c", "from backstay.cli import main; main()"]
USAGE: Final = 2
WAIT_S: Final = 60.0
DONE: Final = {"result": "done", "input_tokens": 1, "output_tokens": 1}
# Each attempt takes a while: a batch can be killed, or its disk filled, while it runs.
SLOW: Final[list[list[dict[str, Any]]]] = [[{"sleep": 1.5}, DONE]]
TASKS: Final = ["a", "b", "c"]
SLOW_TASKS: Final = [f"t{i}" for i in range(6)]


def cli(
    cwd: Path, *args: str | Path, timeout_s: float = WAIT_S
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*BACKSTAY, *(str(arg) for arg in args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def assert_fault(output: str, *words: str) -> str:
    """``output`` holds one ``error:`` line, with every one of ``words``, and no traceback."""
    assert "Traceback" not in output, output
    assert "never retrieved" not in output, output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, output
    for word in words:
        assert word in errors[0], output
    return errors[0]


def assert_exit(
    result: subprocess.CompletedProcess[str], code: int, *words: str
) -> subprocess.CompletedProcess[str]:
    assert result.returncode == code, result.stdout + result.stderr
    assert_fault(result.stderr, *words)
    return result


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def starts(work: Path) -> int:
    """How many times the mock agent was started, all tasks together."""
    return sum(p.stat().st_size for p in (work / "mock").glob("*.attempts"))


def workflows(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT workflow_id, count(*) FROM backstay_tasks GROUP BY 1")
        return {str(name): int(n) for name, n in rows}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with ``suite.yaml`` and ``state/``, the batch of its three tasks done."""
    work = tmp_path_factory.mktemp("finished")
    write_suite(work, TASKS, scenario=[[DONE]])
    done = cli(work, "batch", "suite.yaml", "--state-dir", "state")
    assert done.returncode == ALL_SUCCEEDED, done.stdout + done.stderr
    return work


@pytest.fixture
def work(finished: Path, tmp_path: Path) -> Path:
    """A copy of ``finished`` to damage."""
    copy = tmp_path / "work"
    shutil.copytree(finished, copy)
    return copy


def killed_batch(work: Path, *, after_succeeded: int = 1) -> Path:
    """``state/`` of a batch of slow tasks killed (SIGKILL) once ``after_succeeded`` of
    them succeeded: its tasks live in ``state.sqlite-wal`` (no checkpoint yet)."""
    write_suite(work, SLOW_TASKS, scenario=SLOW)
    state = work / "state"
    with (work / "killed.log").open("ab") as log:
        proc = subprocess.Popen(
            [*BACKSTAY, "batch", "suite.yaml", "--state-dir", "state", "--concurrency", "2"],
            cwd=work,
            stdout=log,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + WAIT_S
        events = state / "events.jsonl"
        while not events.exists() or events.read_text().count("task.succeeded") < after_succeeded:
            assert proc.poll() is None, (work / "killed.log").read_text()
            assert time.monotonic() < deadline, (work / "killed.log").read_text()
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait(timeout=WAIT_S)
    # The mock agents it left finish their one sleep; let them, so none writes later.
    time.sleep(SLOW[0][0]["sleep"] + 0.5)
    return state


# -- a damaged state.sqlite -----------------------------------------------------------


def _garble_page(db: Path) -> None:
    """Overwrite the last page of the task table (every command reads it) with noise."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (size,) = conn.execute("PRAGMA page_size").fetchone()
        (page,) = conn.execute(
            "SELECT max(pageno) FROM dbstat WHERE name = 'backstay_tasks'"
        ).fetchone()
    with db.open("r+b") as file:
        file.seek((page - 1) * size)
        file.write(os.urandom(size))


@pytest.mark.parametrize(
    "args",
    [
        ["status", "--state-dir", "state"],
        ["resume", "--state-dir", "state"],
        ["report", "--state-dir", "state"],
        ["health", "--state-dir", "state"],
        ["batch", "suite.yaml", "--state-dir", "state"],
    ],
    ids=["status", "resume", "report", "health", "batch"],
)
def test_a_damaged_page_is_refused_without_a_traceback_and_left_as_it_is(
    work: Path, args: Sequence[str]
) -> None:
    db = work / "state" / STATE_FILE
    _garble_page(db)
    before, started = digest(db), starts(work)
    assert_exit(cli(work, *args), USAGE, "state/state.sqlite", "is damaged", "malformed")
    assert digest(db) == before
    assert starts(work) == started


# -- records that are gone -------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["status", "--state-dir", "state"],
        ["resume", "--state-dir", "state"],
        ["report", "--state-dir", "state"],
        ["health", "--state-dir", "state"],
        ["batch", "suite.yaml", "--state-dir", "state"],
    ],
    ids=["status", "resume", "report", "health", "batch"],
)
def test_an_emptied_state_file_is_records_gone_never_an_empty_batch(
    work: Path, args: Sequence[str]
) -> None:
    db = work / "state" / STATE_FILE
    db.write_bytes(b"")
    started = starts(work)
    assert_exit(cli(work, *args), USAGE, "state/state.sqlite", "is empty (0 bytes)", "gone")
    assert db.stat().st_size == 0  # no schema written into it
    assert not (work / "state" / f"{STATE_FILE}-wal").exists()
    assert starts(work) == started  # nothing ran again


def test_a_deleted_state_file_is_records_gone_and_batch_runs_nothing_again(work: Path) -> None:
    db = work / "state" / STATE_FILE
    db.unlink()
    started = starts(work)
    assert_exit(cli(work, "status", "--state-dir", "state"), USAGE, "does not exist", "gone")
    assert_exit(cli(work, "batch", "suite.yaml", "--state-dir", "state"), USAGE, "gone")
    assert not db.exists()
    assert starts(work) == started


def test_a_wal_file_lost_after_a_kill_is_records_gone(tmp_path: Path) -> None:
    state = killed_batch(tmp_path)
    db = state / STATE_FILE
    assert (state / f"{STATE_FILE}-wal").exists()
    for side in ("-wal", "-shm"):
        (state / f"{STATE_FILE}{side}").unlink()
    before, started = digest(db), starts(tmp_path)
    for args in (["status"], ["resume"], ["batch", "suite.yaml"]):
        result = cli(tmp_path, *args, "--state-dir", "state")
        assert_exit(result, USAGE, "holds no task", "records are gone", "-wal")
    assert digest(db) == before
    assert starts(tmp_path) == started


def test_a_deleted_batch_json_does_not_start_a_second_batch(work: Path) -> None:
    state = work / "state"
    kept = workflows(state / STATE_FILE)
    (state / BATCH_FILE).unlink()
    started = starts(work)
    result = cli(work, "batch", "suite.yaml", "--state-dir", "state")
    line = assert_exit(result, USAGE, "batch.json is missing", "second batch").stderr
    assert "backstay resume --state-dir state" in line
    assert workflows(state / STATE_FILE) == kept
    assert not (state / BATCH_FILE).exists()
    assert starts(work) == started
    resumed = cli(work, "resume", "--state-dir", "state")
    assert resumed.returncode == ALL_SUCCEEDED, resumed.stdout + resumed.stderr
    assert starts(work) == started


def test_a_batch_killed_while_it_first_started_starts_again(work: Path) -> None:
    """``batch.json`` alone, or with a ``state.sqlite`` holding the schema but no task:
    nothing was recorded, so ``batch`` starts it (``status`` says so)."""
    state = work / "state"
    for name in [STATE_FILE, "events.jsonl", "runs"]:
        path = state / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    shutil.rmtree(work / "mock")
    assert_exit(cli(work, "status", "--state-dir", "state"), USAGE, "starts it again")
    first = cli(work, "batch", "suite.yaml", "--state-dir", "state")
    assert first.returncode == ALL_SUCCEEDED, first.stdout + first.stderr

    other = work / "other"
    other.mkdir()
    shutil.copy(state / BATCH_FILE, other / BATCH_FILE)
    Engine(other).close()  # the schema, no task
    again = cli(work, "batch", "suite.yaml", "--state-dir", "other")
    assert again.returncode == ALL_SUCCEEDED, again.stdout + again.stderr


# -- files that are not UTF-8 ----------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["status"], ["resume"], ["batch", "suite.yaml"]],
    ids=["status", "resume", "batch"],
)
def test_a_non_utf8_batch_json_is_damaged(work: Path, args: list[str]) -> None:
    path = work / "state" / BATCH_FILE
    with path.open("ab") as file:
        file.write(b"\xff\xfe")
    result = cli(work, *args, "--state-dir", "state")
    assert_exit(result, USAGE, str(Path("state") / BATCH_FILE), "is damaged")


def test_non_utf8_lines_of_the_event_log_are_skipped_with_a_warning(work: Path) -> None:
    path = work / "state" / "events.jsonl"
    good = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([good[0], b"\xff\xfe garbage \x80\n", *good[1:], b"\xc3\x28\n"]))
    result = cli(work, "events", "--state-dir", "state")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stdout.splitlines()) == len(good)
    assert "skipped 2 line(s)" in result.stderr


# -- the file system refuses -----------------------------------------------------------


@needs_mounts
def test_a_read_only_state_dir_is_one_clear_error_and_stays_resumable(tmp_path: Path) -> None:
    state = killed_batch(tmp_path)
    before = digest(state / STATE_FILE)
    output = in_mount_namespace(
        """
        mount --bind state state && mount -o remount,bind,ro state || exit 99
        backstay resume --state-dir state > /dev/null 2> resume.err; echo "resume=$?"
        backstay batch suite.yaml --state-dir state > /dev/null 2> batch.err; echo "batch=$?"
        backstay status --state-dir state > /dev/null 2> status.err; echo "status=$?"
        backstay health --state-dir state --json > health.json 2> health.err; echo "health=$?"
        """,
        tmp_path,
    )
    assert f"resume={FILE_SYSTEM_FAULT}" in output, output
    assert f"batch={FILE_SYSTEM_FAULT}" in output, output
    assert "status=0" in output, output
    assert "health=1" in output, output
    for name in ("resume", "batch"):
        err = (tmp_path / f"{name}.err").read_text()
        assert_fault(err, "read-only", "Nothing recorded before was lost", "backstay resume")
    assert '"store:writable"' in (tmp_path / "health.json").read_text()
    assert digest(state / STATE_FILE) == before
    resumed = cli(tmp_path, "resume", "--state-dir", "state")
    assert resumed.returncode == ALL_SUCCEEDED, resumed.stdout + resumed.stderr


@needs_mounts
def test_a_disk_full_mid_batch_stops_it_cleanly_and_resume_finishes_it(tmp_path: Path) -> None:
    write_suite(tmp_path, SLOW_TASKS, scenario=SLOW)
    output = in_mount_namespace(
        """
        mkdir -p disk && mount -t tmpfs -o size=3m tmpfs disk || exit 99
        backstay batch suite.yaml --state-dir disk/state --concurrency 2 \\
            > batch.out 2> batch.err &
        runner=$!
        i=0
        until grep -qs task.succeeded disk/state/events.jsonl || [ $i -ge 600 ]; do
            i=$((i + 1)); sleep 0.05
        done
        dd if=/dev/zero of=disk/fill bs=64k > /dev/null 2>&1
        wait $runner; echo "batch=$?"
        rm disk/fill
        backstay resume --state-dir disk/state > resume.out 2> resume.err; echo "resume=$?"
        """,
        tmp_path,
    )
    err = (tmp_path / "batch.err").read_text()
    assert f"batch={FILE_SYSTEM_FAULT}" in output, output + err
    assert_fault(err, "Nothing recorded before was lost", "backstay resume")
    assert "resume=0" in output, output + (tmp_path / "resume.err").read_text()


def test_a_state_file_truncated_while_the_batch_runs_stops_it_without_a_traceback(
    tmp_path: Path,
) -> None:
    write_suite(tmp_path, SLOW_TASKS, scenario=SLOW)
    state = tmp_path / "state"
    log = tmp_path / "batch.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [*BACKSTAY, "batch", "suite.yaml", "--state-dir", "state", "--concurrency", "2"],
            cwd=tmp_path,
            stdout=out,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + WAIT_S
        while "task.started" not in _text(state / "events.jsonl"):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        os.truncate(state / STATE_FILE, 0)
        code = proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    output = log.read_text()
    assert code in (USAGE, FILE_SYSTEM_FAULT, ALL_SUCCEEDED), output
    assert "Traceback" not in output, output
    assert "never retrieved" not in output, output
    after = cli(tmp_path, "status", "--state-dir", "state")
    assert after.returncode in (USAGE, ALL_SUCCEEDED), after.stdout + after.stderr
    assert "Traceback" not in after.stderr


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""
