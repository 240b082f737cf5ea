"""``backstay batch`` killed with SIGKILL while it still records its runs (the first pages
in and running, the rest not yet recorded): ``backstay resume`` records the rest from the
suite file and finishes the batch, no run lost and none that succeeded started again; a
suite file edited meanwhile is refused, naming it, and nothing runs. On SQLite and Redis
(the refusal on SQLite).
(Pages of 3 runs here, set in the batch's process; the engine's own tests:
tests/engine/test_registration.py.)"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from tests.adapters.support import descendants
from tests.cli.support import write_suite

from backstay.cli._state import ALL_SUCCEEDED
from backstay.engine.registration import PagedRegistration, Registration
from backstay.store.location import STORE_ENV_VAR, StoreLocation, parse_store
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.tasks import RedisTaskStore
from backstay.store.sqlite.tasks import SQLiteTaskStore

TASKS: Final = [f"t{i:02d}" for i in range(10)]
STOP_AT: Final = 6  # the batch stops before its third page: runs 0-5 recorded
WAIT_S: Final = 60.0
FINISH_S: Final = 180.0
# The batch, in pages of 3, stopping for its kill before it makes the workspaces of (and
# records) the page starting at STOP_AT, once two runs started and had two seconds to
# end: it writes ``stopped`` then and sleeps.
_CHILD: Final = r"""
import sys, time
from pathlib import Path
from backstay.engine import registration, suite_batch
registration.PAGE = 3
stop_at, marker = int(sys.argv[1]), Path(sys.argv[2])
prepare = suite_batch.SuiteBatch.prepare_range
def stopping(self, start, stop):
    if start == stop_at:
        mock, deadline = marker.parent / "mock", time.monotonic() + 30
        while len(list(mock.glob("*.attempts"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # two runs started: they end while it waits
        time.sleep(2)
        marker.write_text("stopped")
        time.sleep(60)
        raise SystemExit("not killed")
    prepare(self, start, stop)
suite_batch.SuiteBatch.prepare_range = stopping
sys.argv = ["backstay", *sys.argv[3:]]
from backstay.cli import main
main()
"""


@pytest.fixture(params=["sqlite", "redis"])
def store_args(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)
    if request.param == "sqlite":
        return []
    location: StoreLocation = request.getfixturevalue("redis_location")
    return ["--store", str(location.url), "--lease-ttl", "1"]


def _starts(work: Path, operation_id: str) -> int:
    digest = hashlib.sha256(operation_id.encode("utf-8")).hexdigest()[:32]
    path = work / "mock" / f"{digest}.attempts"
    return path.stat().st_size if path.exists() else 0


@contextlib.contextmanager
def _store(work: Path, args: list[str]) -> Iterator[PagedRegistration]:
    if not args:
        with SQLiteTaskStore(work / "state") as store:
            yield store
        return
    conn = RedisConnection(parse_store(args[1]))
    try:
        yield RedisTaskStore(conn)
    finally:
        conn.close()


def _killed_batch(work: Path, suite: Path, args: list[str]) -> None:
    """Run the batch until it stops at STOP_AT; SIGKILL it and the agents it left."""
    marker = work / "stopped"
    argv = [sys.executable, "-c", _CHILD, str(STOP_AT), str(marker), "batch", str(suite),
            "--state-dir", "state", "--concurrency", "2", *args]  # fmt: skip
    log = work / "batch.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=work, stdout=out, stderr=out)
    left: list[int] = []
    try:
        deadline = time.monotonic() + WAIT_S
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), log.read_text(errors="replace")
        os.kill(proc.pid, signal.SIGSTOP)
        left = descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=WAIT_S) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=WAIT_S)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _resume(work: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", "from backstay.cli import main; main()", "resume",
            "--state-dir", "state", *args]  # fmt: skip
    return subprocess.run(
        argv, cwd=work, capture_output=True, text=True, timeout=FINISH_S, check=False
    )


def test_resume_records_the_runs_a_killed_batch_left_and_finishes_it(
    tmp_path: Path, store_args: list[str]
) -> None:
    suite = write_suite(tmp_path, TASKS, name="rec")
    _killed_batch(tmp_path, suite, store_args)
    with _store(tmp_path, store_args) as store:
        header = store.registration()
        assert isinstance(header, Registration)
        assert (header.recorded, header.total) == (STOP_AT, len(TASKS))
        recorded = store.tasks()  # type: ignore[attr-defined]
        assert len(recorded) == STOP_AT
        done = {r.operation_id: _starts(tmp_path, r.operation_id)
                for r in recorded if r.state.value == "succeeded"}  # fmt: skip
    assert done  # some runs succeeded before the kill
    resumed = _resume(tmp_path, store_args)
    assert resumed.returncode == ALL_SUCCEEDED, resumed.stderr
    assert f"recorded the {len(TASKS) - STOP_AT} runs left" in resumed.stderr
    assert "Traceback" not in resumed.stderr + resumed.stdout
    with _store(tmp_path, store_args) as store:
        assert store.registration() is None
        records = store.tasks()  # type: ignore[attr-defined]
    assert sorted(r.task_id for r in records) == TASKS  # nothing lost
    assert {r.state.value for r in records} == {"succeeded"}
    for op, starts in done.items():  # none that succeeded started again
        assert _starts(tmp_path, op) == starts
    assert (tmp_path / "state" / "runs" / TASKS[-1]).is_dir()  # its workspace made


def test_resume_refuses_a_suite_file_edited_after_the_kill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)
    store_args: list[str] = []  # the refusal reads the header alike on either store
    suite = write_suite(tmp_path, TASKS, name="rec")
    _killed_batch(tmp_path, suite, store_args)
    suite.write_text(suite.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    starts = sum(p.stat().st_size for p in (tmp_path / "mock").glob("*.attempts"))
    resumed = _resume(tmp_path, store_args)
    assert resumed.returncode == 2, resumed.stderr
    assert "was edited since" in resumed.stderr
    assert str(suite.resolve()) in resumed.stderr.replace("\n", "")
    assert "Traceback" not in resumed.stderr
    assert sum(p.stat().st_size for p in (tmp_path / "mock").glob("*.attempts")) == starts
