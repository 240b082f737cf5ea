"""Kill campaigns through the command line: ``backstay batch`` / ``resume`` killed with
SIGKILL at random moments, on SQLite; and on Redis, ``redis-server`` killed (and restarted
from its append-only file) or the runner killed. Whatever the kill, nothing recorded is
lost, no task whose success was recorded is started again, and no run prints a traceback.

``make test`` runs a few kills of each; the campaigns of twenty and more are marked slow
(``make test-all``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from tests.adapters.support import descendants
from tests.cli.support import write_suite
from tests.redis_server import RedisServer, start_redis

from backstay.cli._state import ALL_SUCCEEDED, STORE_UNREACHABLE
from backstay.store.location import STORE_ENV_VAR, parse_store
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.tasks import RedisTaskStore

# Each task's first attempt meets an overloaded provider, the second succeeds: a kill lands
# while attempts run, while retries wait and while results are recorded.
FLAKY: Final = [
    [{"sleep": 0.2}, {"error": "overloaded"}],
    [{"sleep": 0.2}, {"result": "done", "input_tokens": 1, "output_tokens": 1}],
]
TASKS: Final = [f"t{i:02d}" for i in range(24)]
DURABLE: Final = ("--appendonly", "yes", "--appendfsync", "always")
ROUND_LIMIT_S: Final = 60.0
FINAL_LIMIT_S: Final = 180.0
NO_TRACE: Final = ("Traceback", "Task exception was never retrieved", "Event loop is closed")


def _command(*args: str) -> list[str]:
    return [sys.executable, "-c", "from backstay.cli import main; main()", *args]


def _stop(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class Campaign:
    """Rounds of one batch in one directory: each round starts the command line and may
    kill it; the mock agent counts its starts per task, the store says what succeeded."""

    def __init__(self, tmp_path: Path, store: str | None) -> None:
        self.tmp_path = tmp_path
        self.store = store
        self.segment = 0
        self.left: list[int] = []  # agents a killed runner left running
        self.outputs: list[str] = []
        self._new_segment()

    def _new_segment(self) -> None:
        self.segment += 1
        self.work = self.tmp_path / f"seg{self.segment}"
        self.work.mkdir()
        self.suite = write_suite(self.work, TASKS, scenario=FLAKY, name=f"kill{self.segment}")
        # Every task fails once: a breaker would open for its full 30 s and the rounds
        # would only wait; a short open time keeps it in play.
        (self.work / "backstay.yaml").write_text(
            "retry: {circuit_breaker: {open_duration_s: 0.2}}\n", encoding="utf-8"
        )
        self.started = False
        self.done_starts: dict[str, int] = {}  # operation id -> its agent starts, once done

    def _args(self) -> list[str]:
        # On Redis a killed runner's claims lapse after their lease (no process to ask
        # after on another machine): a short one keeps the rounds quick.
        store = (
            ["--store", f"{self.store}?namespace=seg{self.segment}", "--lease-ttl", "1"]
            if self.store
            else []
        )
        if not self.started:
            self.started = True
            return ["batch", str(self.suite), "--state-dir", "state", "--concurrency", "4", *store]
        return ["resume", "--state-dir", "state", *store]

    def starts(self, operation_id: str) -> int:
        digest = hashlib.sha256(operation_id.encode("utf-8")).hexdigest()[:32]
        path = self.work / "mock" / f"{digest}.attempts"
        return path.stat().st_size if path.exists() else 0

    def succeeded(self) -> set[str]:
        """Operation ids recorded as succeeded, read as another process would."""
        if self.store:
            conn = RedisConnection(parse_store(f"{self.store}?namespace=seg{self.segment}"))
            try:
                return {r.operation_id for r in RedisTaskStore(conn).tasks()
                        if r.state.value == "succeeded"}  # fmt: skip
            except Exception:
                return set()
            finally:
                conn.close()
        uri = f"file:{self.work / 'state' / 'state.sqlite'}?mode=ro"
        try:
            with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
                rows = conn.execute(
                    "SELECT operation_id FROM backstay_tasks WHERE state = 'succeeded'"
                ).fetchall()
        except sqlite3.Error:
            return set()
        return {row[0] for row in rows}

    def note_done(self) -> None:
        for op in self.succeeded():
            self.done_starts.setdefault(op, self.starts(op))

    def check_done_not_rerun(self) -> None:
        for op, starts in self.done_starts.items():
            assert self.starts(op) == starts, f"{op} started again after its success"

    def total_starts(self) -> int:
        mock = self.work / "mock"
        return sum(p.stat().st_size for p in mock.glob("*.attempts")) if mock.exists() else 0

    def wait_for_an_agent(self, proc: subprocess.Popen[bytes], pause_s: float) -> None:
        """Wait (bounded) until this round starts an agent, then ``pause_s`` more: the
        kill lands while work is under way, not during the command's start-up."""
        before, deadline = self.total_starts(), time.monotonic() + ROUND_LIMIT_S
        while self.total_starts() == before and proc.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        time.sleep(pause_s)

    def start(self) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.work / f"round{len(self.outputs)}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(_command(*self._args()), cwd=self.work, stdout=out, stderr=out)
        return proc, log

    def finish(self, proc: subprocess.Popen[bytes], log: Path, limit_s: float) -> int:
        try:
            code = proc.wait(timeout=limit_s)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.outputs.append(log.read_text(errors="replace"))
        return code

    def kill_runner(self, proc: subprocess.Popen[bytes], log: Path) -> bool:
        """SIGKILL the runner (its agents are left running, as a crash leaves them); False
        when it had ended already."""
        if proc.poll() is not None:
            self.finish(proc, log, 1.0)
            return False
        os.kill(proc.pid, signal.SIGSTOP)
        self.left += descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        self.finish(proc, log, 10.0)
        return True

    def complete(self) -> None:
        """Run ``resume`` to the end; the segment's batch must be whole."""
        proc, log = self.start()
        code = self.finish(proc, log, FINAL_LIMIT_S)
        assert code == ALL_SUCCEEDED, self.outputs[-1]
        self.check_done_not_rerun()
        assert len(self.succeeded()) == len(TASKS)  # nothing lost

    def roll_over_when_finished(self) -> None:
        if len(self.succeeded()) == len(TASKS):
            self.complete()
            self._new_segment()

    def check_outputs(self) -> None:
        for output in self.outputs:
            for marker in NO_TRACE:
                assert marker not in output, output

    def close(self) -> None:
        _stop(self.left)


@pytest.fixture
def campaign_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)


def _sqlite_campaign(tmp_path: Path, kills: int, seed: int) -> None:
    rng = random.Random(seed)
    camp = Campaign(tmp_path, None)
    landed = 0
    try:
        for _ in range(kills * 4):
            if landed >= kills:
                break
            proc, log = camp.start()
            camp.wait_for_an_agent(proc, rng.uniform(0.0, 1.5))
            landed += camp.kill_runner(proc, log)
            camp.note_done()
            camp.check_done_not_rerun()
            camp.roll_over_when_finished()
        assert landed >= kills
        camp.complete()
        camp.check_outputs()
    finally:
        camp.close()


def test_a_few_kills_of_batch_and_resume_lose_nothing_and_rerun_nothing(
    tmp_path: Path, campaign_env: None
) -> None:
    _sqlite_campaign(tmp_path, kills=3, seed=1)


@pytest.mark.slow
def test_twenty_kills_of_batch_and_resume_lose_nothing_and_rerun_nothing(
    tmp_path: Path, campaign_env: None
) -> None:
    _sqlite_campaign(tmp_path, kills=20, seed=20)


@pytest.fixture
def durable(tmp_path: Path) -> Iterator[RedisServer]:
    try:
        server = start_redis(*DURABLE, directory=tmp_path / "redis")
    except FileNotFoundError as err:
        pytest.skip(str(err))
    yield server
    server.stop()  # the campaign's last server is stopped by the campaign


def _redis_campaign(tmp_path: Path, server: RedisServer, kills: int, seed: int) -> None:
    rng = random.Random(seed)
    base = f"redis://127.0.0.1:{server.port}/0"
    camp = Campaign(tmp_path, base)
    landed = 0
    try:
        for round_no in range(kills * 4):
            if landed >= kills:
                break
            proc, log = camp.start()
            camp.wait_for_an_agent(proc, rng.uniform(0.0, 1.5))
            if round_no % 3 == 2:  # one round in three: the runner dies
                landed += camp.kill_runner(proc, log)
            elif proc.poll() is None:  # else: Redis dies; the runner must stop cleanly
                server.crash()
                code = camp.finish(proc, log, ROUND_LIMIT_S)
                assert code in (STORE_UNREACHABLE, ALL_SUCCEEDED), camp.outputs[-1]
                server = start_redis(*DURABLE, port=server.port, directory=server.directory)
                landed += 1
            else:
                camp.finish(proc, log, 1.0)
            camp.note_done()
            camp.check_done_not_rerun()
            camp.roll_over_when_finished()
        assert landed >= kills
        camp.complete()
        camp.check_outputs()
    finally:
        camp.close()
        server.stop()


def test_a_few_kills_of_redis_and_the_runner_lose_nothing_and_rerun_nothing(
    tmp_path: Path, durable: RedisServer, campaign_env: None
) -> None:
    _redis_campaign(tmp_path, durable, kills=3, seed=3)


@pytest.mark.slow
def test_twenty_kills_of_redis_and_the_runner_lose_nothing_and_rerun_nothing(
    tmp_path: Path, durable: RedisServer, campaign_env: None
) -> None:
    _redis_campaign(tmp_path, durable, kills=20, seed=21)
