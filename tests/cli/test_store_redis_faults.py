"""Redis fails in the middle of a batch: with ``unavailable: stop`` the batch stops at
once, says what happened (exit 6), loses nothing it recorded, and a resume once Redis is
back runs no finished task again; with ``unavailable: wait`` it waits for Redis, says so,
and finishes the batch when Redis answers again."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli.support import invoke, write_suite
from tests.redis_server import RedisServer, start_redis

from backstay.cli import _report as report_module
from backstay.cli._state import ALL_SUCCEEDED, STORE_UNREACHABLE
from backstay.store.location import STORE_ENV_VAR, StoreUnreachable, parse_store
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.tasks import RedisTaskStore

TASKS = [f"t{i}" for i in range(6)]
SLOW = [[{"sleep": 0.3}, {"result": "done", "input_tokens": 1, "output_tokens": 1}]]
DURABLE = ("--appendonly", "yes", "--appendfsync", "always")
WAIT_S = 30.0


@pytest.fixture
def durable(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis that keeps every write in its append-only file, restartable in place."""
    server = start_redis(*DURABLE, directory=tmp_path / "redis")
    yield server
    server.stop()


def _restart(server: RedisServer) -> RedisServer:
    return start_redis(*DURABLE, port=server.port, directory=server.directory)


def _url(server: RedisServer) -> str:
    return f"{server.url}?namespace=faults"


def _succeeded(url: str) -> dict[str, str]:
    """Task id → operation id of the tasks recorded as succeeded."""
    conn = RedisConnection(parse_store(url))
    try:
        return {
            r.task_id: r.operation_id
            for r in RedisTaskStore(conn).tasks()
            if r.state.value == "succeeded"
        }
    except Exception:
        return set()
    finally:
        conn.close()


def _starts(tmp_path: Path, operation_id: str) -> int:
    """How often the mock agent was started for an operation (its own count, one byte a
    start, in a file named by the operation id's digest: ``adapters.mock``)."""
    digest = hashlib.sha256(operation_id.encode("utf-8")).hexdigest()[:32]
    path = tmp_path / "mock" / f"{digest}.attempts"
    return path.stat().st_size if path.exists() else 0


def _batch(tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-c", "from backstay.cli import main; main()", *args]
    with (tmp_path / "batch.log").open("ab") as log:
        return subprocess.Popen(command, cwd=tmp_path, stdout=log, stderr=log)


def _wait_for(predicate: object, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():  # type: ignore[operator]
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)


@pytest.mark.usefixtures("durable")
def test_redis_lost_mid_batch_stops_it_and_a_resume_runs_no_finished_task_again(
    tmp_path: Path, durable: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)
    suite = write_suite(tmp_path, TASKS, scenario=SLOW)
    url = _url(durable)
    log = tmp_path / "batch.log"
    proc = _batch(tmp_path, "batch", str(suite), "--state-dir", "a", "--store", url,
                  "--concurrency", "2", "--lease-ttl", "1")  # fmt: skip
    try:
        _wait_for(lambda: len(_succeeded(url)) >= 2, proc, log)
        durable.crash()
        code = proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    output = log.read_text()
    assert code == STORE_UNREACHABLE, output
    assert "does not answer" in output
    assert "backstay resume --store" in output
    assert "Traceback" not in output
    assert "never retrieved" not in output  # the tasks cancelled with it end quietly
    restarted = _restart(durable)
    try:
        done_before = _succeeded(url)
        assert len(done_before) >= 2  # nothing recorded was lost
        starts_before = {op: _starts(tmp_path, op) for op in done_before.values()}
        resumed = subprocess.run(
            [sys.executable, "-c", "from backstay.cli import main; main()", "resume",
             "--state-dir", "b", "--store", url],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert resumed.returncode == ALL_SUCCEEDED, resumed.stdout + resumed.stderr
        assert set(_succeeded(url)) == set(TASKS)
        for op in done_before.values():
            assert starts_before[op] == _starts(tmp_path, op) == 1  # never ran again
    finally:
        restarted.stop()


@pytest.mark.slow
def test_with_wait_the_batch_waits_for_redis_and_finishes(
    tmp_path: Path, durable: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)
    url = _url(durable)
    (tmp_path / "backstay.yaml").write_text(
        json.dumps({"store": {"url": url, "unavailable": "wait"}}), encoding="utf-8"
    )
    suite = write_suite(tmp_path, TASKS[:4], scenario=SLOW)
    log = tmp_path / "batch.log"
    proc = _batch(tmp_path, "batch", str(suite), "--state-dir", "a", "--concurrency", "2")
    try:
        _wait_for(lambda: len(_succeeded(url)) >= 1, proc, log)
        durable.crash()
        time.sleep(1.5)
        assert proc.poll() is None, log.read_text()  # waiting, not stopped
        restarted = _restart(durable)
        try:
            code = proc.wait(timeout=60)
            output = log.read_text()
            assert code == ALL_SUCCEEDED, output
            assert "waiting for it" in output
            assert "answers again" in output
            assert set(_succeeded(url)) == set(TASKS[:4])
        finally:
            restarted.stop()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_redis_gone_as_a_resume_reports_is_exit_6_without_a_traceback(
    tmp_path: Path, durable: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resume's own reads after the run (its report) hit a Redis that died there: the
    same exit 6 and message as a Redis lost mid-batch, not a traceback."""
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)
    suite = write_suite(tmp_path, TASKS[:2])
    url = _url(durable)
    done = invoke("batch", suite, "--state-dir", tmp_path / "a", "--store", url)
    assert done.exit_code == ALL_SUCCEEDED, done.output
    real_report = report_module.report_run  # resume imports it from there when it runs

    def crash_first(*args: Any, **kwargs: Any) -> None:
        durable.crash()  # the real server, killed just before the report reads from it
        real_report(*args, **kwargs)

    monkeypatch.setattr(report_module, "report_run", crash_first)
    result = invoke("resume", "--state-dir", tmp_path / "a", "--store", url)
    assert result.exit_code == STORE_UNREACHABLE, result.output
    assert "does not answer" in result.output
    assert not isinstance(result.exception, StoreUnreachable)
    restarted = _restart(durable)
    try:
        assert set(_succeeded(url)) == set(TASKS[:2])  # nothing recorded was lost
    finally:
        restarted.stop()
