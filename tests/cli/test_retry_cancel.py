"""``backstay retry`` and ``backstay cancel`` through the real stores (SQLite in the state
directory, and a real redis-server): a failed task re-opened runs again at the next
resume (with the recorded spec, or the suite's current one), a cancelled one never
runs, a running one is stopped through its lease, and every move is an event."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

import pytest
from tests.cli.support import DONE, invoke, states_of, write_suite

from backstay.adapters.cli.orphans import attempt_tag, tagged_processes
from backstay.cli._errors import USAGE_ERROR
from backstay.cli._state import ALL_SUCCEEDED, SOME_FAILED, SOME_WAITING
from backstay.config import load_suite
from backstay.engine import SuiteBatch
from backstay.store.location import STORE_ENV_VAR, StoreLocation, parse_store
from backstay.store.open import open_stores

OVERFLOW: Final = [{"error": "context_overflow"}]
# Fails once (context overflow: failed for good), then succeeds when run again.
FAILS_ONCE: Final = [OVERFLOW, DONE]
WAIT_S: Final = 30.0


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """The batch's store: SQLite in the state directory, or a namespace of a real Redis
    (given through BACKSTAY_STORE, as an operator's shell would)."""
    if request.param == "sqlite":
        return None
    location: StoreLocation = request.getfixturevalue("redis_location")
    assert location.url is not None
    monkeypatch.setenv(STORE_ENV_VAR, location.url)
    return location.url


def _events(state: Path, name: str) -> list[dict[str, Any]]:
    lines = (state / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [event for event in map(json.loads, lines) if event["event"] == name]


def _failed_batch(tmp_path: Path, tasks: list[str] | None = None) -> tuple[Path, Path]:
    tasks = tasks or ["ok", "bad"]
    failing = {task: FAILS_ONCE for task in tasks if task != "ok"}
    suite = write_suite(tmp_path, tasks, scenarios=failing)
    state = tmp_path / "state"
    result = invoke("batch", suite, "--state-dir", state)
    assert result.exit_code == SOME_FAILED, result.output
    return suite, state


@pytest.mark.usefixtures("store")
def test_a_retried_failed_task_runs_again_at_resume_and_succeeds(tmp_path: Path) -> None:
    _, state = _failed_batch(tmp_path)
    retried = invoke("retry", "bad", "--state-dir", state)
    assert retried.exit_code == 0, retried.output
    assert "bad/T0-run_01: failed -> pending (spec: as recorded)" in retried.output
    assert f"backstay resume --state-dir {state}" in retried.output
    assert states_of(state)["bad/T0-run_01"] == "pending"
    resumed = invoke("resume", "--state-dir", state)
    assert resumed.exit_code == ALL_SUCCEEDED, resumed.output
    assert states_of(state) == {"ok/T0-run_01": "succeeded", "bad/T0-run_01": "succeeded"}
    (event,) = _events(state, "task.reopened")
    assert (event["task_id"], event["previous_state"], event["spec"]) == ("bad", "failed", "stored")


@pytest.mark.usefixtures("store")
def test_retry_state_failed_reopens_every_failed_task_and_no_other(tmp_path: Path) -> None:
    _, state = _failed_batch(tmp_path, ["ok", "bad", "worse"])
    retried = invoke("retry", "--state", "failed", "--state-dir", state)
    assert retried.exit_code == 0, retried.output
    assert states_of(state) == {
        "ok/T0-run_01": "succeeded",
        "bad/T0-run_01": "pending",
        "worse/T0-run_01": "pending",
    }


def test_retry_of_a_succeeded_task_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    _, state = _failed_batch(tmp_path)
    refused = invoke("retry", "ok", "bad", "--state-dir", state)
    assert refused.exit_code == USAGE_ERROR, refused.output
    assert "ok/T0-run_01 is succeeded" in refused.output
    assert "nothing was changed" in refused.output
    assert states_of(state)["bad/T0-run_01"] == "failed"


def test_retry_of_an_unknown_task_names_it_and_the_known_ones(tmp_path: Path) -> None:
    _, state = _failed_batch(tmp_path)
    refused = invoke("retry", "nope", "--state-dir", state)
    assert refused.exit_code == USAGE_ERROR
    assert "no task of the batch is 'nope' (its task ids: bad, ok)" in refused.output
    assert "Traceback" not in refused.output


def test_retry_without_tasks_or_state_says_what_to_give(tmp_path: Path) -> None:
    _, state = _failed_batch(tmp_path)
    refused = invoke("retry", "--state-dir", state)
    assert refused.exit_code == USAGE_ERROR
    assert "name the tasks to retry (TASK...), or give --state" in refused.output
    wrong = invoke("retry", "--state", "succeeded", "--state-dir", state)
    assert wrong.exit_code == USAGE_ERROR
    assert "must be one of cancelled, failed, got 'succeeded'" in wrong.output


@pytest.mark.usefixtures("store")
def test_retry_with_the_suite_takes_its_edited_prompt_and_says_so(tmp_path: Path) -> None:
    suite, state = _failed_batch(tmp_path)
    text = suite.read_text(encoding="utf-8").replace("prompt: do bad", "prompt: do it better")
    suite.write_text(text, encoding="utf-8")
    retried = invoke("retry", "bad", "--suite", suite, "--state-dir", state)
    assert retried.exit_code == 0, retried.output
    assert f"(spec: {suite}, prompt changed)" in retried.output
    stores = open_stores(_location(state), state_dir=state)
    try:
        (record,) = [r for r in stores.tasks.tasks() if r.task_id == "bad"]
    finally:
        stores.close()
    assert record.spec.prompt == "do it better"
    (event,) = _events(state, "task.reopened")
    assert event["spec"] == "suite"


def _location(state: Path) -> StoreLocation:
    url = os.environ.get(STORE_ENV_VAR)
    return parse_store(url) if url else StoreLocation.sqlite(state)


def _registered(tmp_path: Path, tasks: list[str]) -> Path:
    """A batch whose tasks are registered (pending) and none has run."""
    state = tmp_path / "state"
    suite = load_suite(write_suite(tmp_path, tasks))
    batch = SuiteBatch.open(suite, state)
    batch.prepare()
    stores = open_stores(_location(state), state_dir=state)
    try:
        stores.tasks.register_all(batch.specs, at=dt.datetime.now(dt.UTC))
    finally:
        stores.close()
    return state


@pytest.mark.usefixtures("store")
def test_cancelled_pending_tasks_never_run_and_retry_brings_them_back(tmp_path: Path) -> None:
    state = _registered(tmp_path, ["a", "b"])
    cancelled = invoke("cancel", "a", "--state-dir", state, "--note", "not needed")
    assert cancelled.exit_code == 0, cancelled.output
    assert "a/T0-run_01: pending -> cancelled" in cancelled.output
    resumed = invoke("resume", "--state-dir", state)
    assert resumed.exit_code == SOME_FAILED, resumed.output
    assert states_of(state) == {"a/T0-run_01": "cancelled", "b/T0-run_01": "succeeded"}
    assert not (state / "runs" / "a" / "T0" / "run_01" / "attempt_1").exists()
    (event,) = _events(state, "task.cancelled")
    assert (event["task_id"], event["previous_state"]) == ("a", "pending")
    assert "not needed" in event["reason"]
    assert invoke("retry", "a", "--state-dir", state).exit_code == 0
    assert invoke("resume", "--state-dir", state).exit_code == ALL_SUCCEEDED


def test_cancel_of_a_finished_task_is_refused(tmp_path: Path) -> None:
    _, state = _failed_batch(tmp_path)
    refused = invoke("cancel", "ok", "--state-dir", state)
    assert refused.exit_code == USAGE_ERROR
    assert "ok/T0-run_01 is succeeded" in refused.output


def test_cancel_state_paused_closes_its_escalation(tmp_path: Path) -> None:
    quota = [[{"error": "quota", "resets_at": "2099-01-01T00:00:00+00:00"}]]
    suite = write_suite(tmp_path, ["ok", "quota"], scenarios={"quota": quota})
    state = tmp_path / "state"
    assert invoke("batch", suite, "--state-dir", state).exit_code == SOME_WAITING
    cancelled = invoke("cancel", "--state", "paused", "--state-dir", state)
    assert cancelled.exit_code == 0, cancelled.output
    assert states_of(state)["quota/T0-run_01"] == "cancelled"
    listed = invoke("escalations", "list", "--state-dir", state, "--all", "--json")
    (item,) = json.loads(listed.stdout)
    assert (item["status"], item["action"], item["resolved_by"]) == ("resolved", "skip", "operator")


def _batch_process(tmp_path: Path, *args: str | Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-c", "from backstay.cli import main; main()", *map(str, args)]
    with (tmp_path / "batch.log").open("ab") as log:
        return subprocess.Popen(command, cwd=tmp_path, stdout=log, stderr=log)


@pytest.mark.usefixtures("store")
def test_cancel_of_a_running_task_stops_its_attempt_through_the_lease(tmp_path: Path) -> None:
    hang = {"slow": [[{"print": "started"}, {"hang": True}]]}
    suite = write_suite(tmp_path, ["slow"], scenarios=hang)
    state = tmp_path / "state"
    proc = _batch_process(tmp_path, "batch", suite, "--state-dir", state, "--lease-ttl", "1.5")
    log = tmp_path / "batch.log"
    try:
        deadline = time.monotonic() + WAIT_S
        while not (state / "batch.json").exists() or _state_of(state, "slow") != "running":
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        cancelled = invoke("cancel", "slow", "--state-dir", state)
        assert cancelled.exit_code == 0, cancelled.output
        assert "running -> cancelled; its runner stops the attempt" in cancelled.output
        code = proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == SOME_FAILED, log.read_text()
    assert "Traceback" not in log.read_text()
    assert states_of(state) == {"slow/T0-run_01": "cancelled"}
    stores = open_stores(_location(state), state_dir=state)
    try:
        attempts = stores.tasks.attempts()
    finally:
        stores.close()
    assert [a.outcome.value for a in attempts] == ["interrupted"]
    assert tagged_processes(attempt_tag(attempts[0].output_dir)) == []  # the agent was stopped


def _state_of(state: Path, task: str) -> str | None:
    result = invoke("status", "--state-dir", state, "--json")
    if result.exit_code != 0:
        return None
    found = [t["state"] for t in json.loads(result.stdout)["tasks"] if t["task_id"] == task]
    return found[0] if found else None
