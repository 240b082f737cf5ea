"""``backstay status`` on a batch of every state, on SQLite and on a real Redis: the counts,
the tasks that need a person, ``--state``, ``--task``, ``--limit``, ``--all``, interrupted
tasks (running, and no live lease holds them), and ``--json`` streamed."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli.support import invoke
from tests.store.summary_support import fill, task_ids

from backstay.idempotency.owners import default_owner
from backstay.store import _task_rows as rows
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.operations import RedisOperationStore
from backstay.store.redis.tasks import RedisTaskStore
from backstay.store.sqlite.operations import SQLiteOperationStore
from backstay.store.sqlite.tasks import STATE_FILE, SQLiteTaskStore

NEED_A_PERSON = ["bad-1", "bad-2", "gone-1", "gone-2", "human-1", "quota-1"]


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv("BACKSTAY_STORE", raising=False)


@pytest.fixture(params=["sqlite", "redis"])
def batch(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    """A recorded batch of every state (``summary_support``) in which ``gone-2`` is held
    by a live lease (this process) and ``gone-1`` by none; the flags naming it."""
    state = tmp_path / "state"
    if request.param == "sqlite":
        with SQLiteTaskStore(state) as store:
            made = {spec.task_id: spec for spec in fill(store, tmp_path)}
        with SQLiteOperationStore(state / STATE_FILE) as operations:
            operations.claim(made["gone-2"].operation_id, default_owner(), 600.0)
        yield ["--state-dir", str(state)]
        return
    location: StoreLocation = request.getfixturevalue("redis_location")
    conn = RedisConnection(location)
    try:
        made = {spec.task_id: spec for spec in fill(RedisTaskStore(conn), tmp_path)}
        RedisOperationStore(conn).claim(made["gone-2"].operation_id, default_owner(), 600.0)
        yield ["--state-dir", str(state), "--store", str(location.url)]
    finally:
        conn.close()


def _rows(output: str) -> dict[str, str]:
    """Task id → its table row."""
    return {
        line.split()[1].split("/")[0]: line
        for line in output.splitlines()
        if "/run_01" in line and line.startswith("│")
    }


def _status(*args: str) -> str:
    result = invoke("status", *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def _json(*args: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_status(*args, "--json"))
    return data


def test_status_counts_every_state_and_lists_who_needs_a_person(batch: list[str]) -> None:
    out = _status(*batch)
    assert (
        "16 tasks: 2 pending, 1 running, 1 retrying, 6 succeeded, 2 failed, 1 paused, "
        "1 escalated, 1 cancelled, 1 interrupted"
    ) in out
    assert "2 open escalations" in out
    assert "1 interrupted (no process runs them): backstay resume --state-dir" in out
    rows = _rows(out)
    assert sorted(rows) == NEED_A_PERSON
    assert " interrupted " in rows["gone-1"]
    assert " running " in rows["gone-2"]


def test_state_chooses_the_states_listed(batch: list[str]) -> None:
    assert sorted(_rows(_status(*batch, "--state", "failed", "--state", "paused"))) == [
        "bad-1",
        "bad-2",
        "quota-1",
    ]
    assert sorted(_rows(_status(*batch, "--state", "interrupted"))) == ["gone-1"]
    assert sorted(_rows(_status(*batch, "--state", "running"))) == ["gone-2"]
    assert sorted(_rows(_status(*batch, "--state", "pending"))) == ["wait-0", "wait-1"]


def test_task_chooses_tasks_of_any_state_by_pattern(batch: list[str]) -> None:
    assert sorted(_rows(_status(*batch, "--task", "ok-[0-2]"))) == ["ok-0", "ok-1", "ok-2"]
    assert sorted(_rows(_status(*batch, "--task", "*-2", "--state", "running"))) == ["gone-2"]
    assert "no tasks (task nothing-*) match" in _status(*batch, "--task", "nothing-*")


def test_limit_lists_the_first_tasks_and_says_how_many_more(batch: list[str]) -> None:
    out = _status(*batch, "--limit", "2")
    assert sorted(_rows(out)) == ["bad-1", "bad-2"]
    assert "… and 4 more: --limit N or --all lists them" in out


def test_all_lists_every_task(batch: list[str]) -> None:
    out = _status(*batch, "--all")
    assert sorted(_rows(out)) == task_ids()
    assert "more:" not in out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--state", "done"], "error: --state: unknown state done; the states are pending"),
        (["--limit", "0"], "error: --limit: must be 1 or more, got 0"),
        (["--limit", "3", "--all"], "error: --limit: --limit and --all exclude each other"),
    ],
)
def test_a_wrong_flag_exits_2_naming_it(batch: list[str], flags: list[str], message: str) -> None:
    result = invoke("status", *batch, *flags)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_json_lists_every_task_with_interrupted_ones_named(batch: list[str]) -> None:
    data = _json(*batch)
    states = {task["task_id"]: task["state"] for task in data["tasks"]}
    assert list(states) == task_ids()
    assert (states["gone-1"], states["gone-2"]) == ("interrupted", "running")
    assert data["by_state"]["interrupted"] == data["by_state"]["running"] == 1
    assert data["total"] == len(task_ids())
    assert data["attempts"] == 13  # every task but the pending and the cancelled ones
    assert data["failures_by_kind"] == {"content_policy": 4, "quota_exhausted": 1}
    assert data["open_escalations"] == 2
    assert (data["listed"], data["more"]) == (16, 0)


def test_json_takes_the_same_filters(batch: list[str]) -> None:
    data = _json(*batch, "--state", "failed", "--state", "interrupted", "--limit", "2")
    assert [task["task_id"] for task in data["tasks"]] == ["bad-1", "bad-2"]
    assert (data["listed"], data["more"]) == (2, 1)
    assert data["selected"] == {"states": ["failed", "interrupted"], "task": None, "limit": 2}
    assert data["by_state"]["succeeded"] == 6  # the totals stay the whole batch's


def test_health_warns_of_interrupted_tasks(batch: list[str]) -> None:
    result = invoke("health", *batch, "--json")
    assert result.exit_code == 0, result.output
    (check,) = json.loads(result.stdout)["checks"]["tasks:interrupted"]
    assert (check["status"], check["observedValue"]) == ("warn", 1)


def test_status_on_a_state_file_of_schema_2_migrates_it_and_counts_right(tmp_path: Path) -> None:
    state = tmp_path / "old"
    with SQLiteTaskStore(state) as store:
        fill(store, tmp_path)
    db = state / STATE_FILE
    conn = sqlite3.connect(db)
    for kind, name in conn.execute(
        "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'index') "
        "AND name LIKE 'backstay_tasks_%'"
    ).fetchall():
        conn.execute(f"DROP {kind} {name}")
    conn.execute(f"DROP TABLE {rows.COUNTS}")
    conn.execute("UPDATE backstay_schema SET version = 2 WHERE component = 'tasks'")
    conn.commit()
    conn.close()
    out = _status("--state-dir", str(state), "--state", "failed")
    assert "16 tasks: 2 pending, 1 retrying, 6 succeeded, 2 failed" in out
    assert sorted(_rows(out)) == ["bad-1", "bad-2"]
    conn = sqlite3.connect(db)
    (version,) = conn.execute("SELECT version FROM backstay_schema WHERE component = 'tasks'")
    conn.close()
    assert version == (rows.SCHEMA_VERSION,)
