"""Where a suite's agent runs are recorded: under the task's tenant, in the batch's own
store (its ``state.sqlite``, or its Redis), never in a file found above the state
directory. Through ``backstay batch``, the real engine, SQLite files, a real
redis-server and the fake provider."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Final

import pytest
from tests.cli.support import invoke

from backstay.adapters.contract import AgentRequest
from backstay.cli._state import ALL_SUCCEEDED
from backstay.fakeprovider import FakeProvider, Reply, Scenario
from backstay.runtime.engine_adapter import run_location, run_tenant
from backstay.runtime.records import RunStatus
from backstay.store.location import STORE_ENV_VAR, StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.runs import RedisRunStore
from backstay.store.redis.tasks import RedisTaskStore

KEY: Final = "sk-ant-api03-TENANTcanary0123456789abcdefABCDEFghij"
SUITE: Final = """\
suite: tenants
defaults: {{adapter: agent-runtime, model: claude-sonnet-4-6, timeout_s: 60}}
adapters:
  agent-runtime:
    agent: "backstay.runtime.reference:make_agent"
    options: {{base_url: "{url}"}}
    api_key_env: ANTHROPIC_API_KEY
    tenant: initech
tasks:
  - {{id: a, prompt: "Say hello.", tenant: acme}}
  - {{id: g, prompt: "Say hello.", tenant: globex}}
  - {{id: i, prompt: "Say hello."}}
"""


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def _batch(tmp_path: Path, state: Path, *store: str) -> None:
    with FakeProvider(Scenario(reply=Reply(text="Hello."))) as fake:
        suite = tmp_path / "suite.yaml"
        suite.write_text(SUITE.format(url=fake.url), encoding="utf-8")
        result = invoke("batch", suite, "--state-dir", state, *store)
    assert result.exit_code == ALL_SUCCEEDED, result.output


def _foreign(path: Path) -> bytes:
    """Another program's SQLite file at ``path``; its bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE my_app (k)")
    conn.close()
    return path.read_bytes()


def _sqlite_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.sqlite*") if p.is_file())


def test_each_run_is_recorded_under_its_tasks_tenant(tmp_path: Path) -> None:
    """The task's ``tenant:`` first, else the adapter's ``tenant`` setting."""
    state = tmp_path / "state"
    _batch(tmp_path, state)
    with sqlite3.connect(state / "state.sqlite") as conn:
        rows = conn.execute("SELECT tenant, run_id, status FROM agent_runs").fetchall()
    conn.close()
    found = {run_id.split(":")[-2]: (tenant, status) for tenant, run_id, status in rows}
    assert found == {
        "a": ("acme", "succeeded"),
        "g": ("globex", "succeeded"),
        "i": ("initech", "succeeded"),
    }


def test_a_foreign_state_sqlite_above_the_state_dir_is_left_byte_for_byte(
    tmp_path: Path,
) -> None:
    before = _foreign(tmp_path / "state.sqlite")
    state = tmp_path / "x" / "state"
    _batch(tmp_path, state)
    assert (tmp_path / "state.sqlite").read_bytes() == before
    assert _sqlite_files(tmp_path) == [
        tmp_path / "state.sqlite",
        *sorted(p for p in state.glob("state.sqlite*") if p.is_file()),
    ]


def test_on_a_redis_store_the_runs_are_in_redis_and_no_sqlite_file_is_touched(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    before = _foreign(tmp_path / "state.sqlite")
    state = tmp_path / "x" / "state"
    assert redis_location.url is not None
    _batch(tmp_path, state, "--store", redis_location.url)
    assert (tmp_path / "state.sqlite").read_bytes() == before
    assert _sqlite_files(tmp_path) == [tmp_path / "state.sqlite"]
    conn = RedisConnection(redis_location)
    try:
        runs = RedisRunStore(conn)
        found = {}
        for task in RedisTaskStore(conn).tasks():
            run = runs.load_run(task.spec.tenant or "initech", task.operation_id)
            assert run is not None, task.operation_id
            assert runs.load_run("default", task.operation_id) is None
            found[task.spec.task_id] = (run.tenant, run.status)
    finally:
        conn.close()
    assert found == {
        "a": ("acme", RunStatus.SUCCEEDED),
        "g": ("globex", RunStatus.SUCCEEDED),
        "i": ("initech", RunStatus.SUCCEEDED),
    }


def test_backstay_run_records_the_run_in_its_output_directory_only(tmp_path: Path) -> None:
    """A single ``backstay run`` has no state directory: its run is kept in its output
    directory, and a foreign ``state.sqlite`` beside that directory is left alone."""
    before = _foreign(tmp_path / "state.sqlite")
    (tmp_path / "prompt.txt").write_text("Say hello.", encoding="utf-8")
    (tmp_path / "ws").mkdir()
    with FakeProvider(Scenario(reply=Reply(text="Hello."))) as fake:
        result = invoke(
            "run", "--adapter", "agent-runtime", "--prompt-file", "prompt.txt",
            "--workspace", "ws", "--output-dir", "out", "--model", "claude-sonnet-4-6",
            "--timeout", "30",
            "--adapter-option", "agent=backstay.runtime.reference:make_agent",
            "--adapter-option", f"options={{base_url: '{fake.url}'}}",
            "--adapter-option", "api_key_env=ANTHROPIC_API_KEY",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (tmp_path / "state.sqlite").read_bytes() == before
    with sqlite3.connect(tmp_path / "out" / "state.sqlite") as conn:
        rows = conn.execute("SELECT tenant, status FROM agent_runs").fetchall()
    conn.close()
    assert rows == [("default", "succeeded")]


def test_outside_an_engine_the_run_is_recorded_in_its_output_directory(tmp_path: Path) -> None:
    request = AgentRequest(
        model="m", workspace=tmp_path, output_dir=tmp_path / "out", timeout_s=1, prompt="p"
    )
    assert run_location(request) == StoreLocation.sqlite(tmp_path / "out")
    assert run_tenant(request) == "default"
