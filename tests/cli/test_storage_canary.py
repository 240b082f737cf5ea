"""Nothing kept at rest holds what the user did not choose to keep: a batch whose prompts
carry a canary e-mail address and card number, answered by a model that echoes them (the
fake provider), through an API adapter and the agent runtime, on SQLite and on a real
redis-server; then every table and column of ``state.sqlite``, every byte of every file
under the state directory and every Redis value is searched, and none holds the canary.
The state directory's files are private (0600, directories 0700)."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import redis
import yaml
from tests.cli.support import invoke

from backstay.cli._state import ALL_SUCCEEDED
from backstay.fakeprovider import FakeProvider, Reply, Scenario
from backstay.store.location import STORE_ENV_VAR, StoreLocation

EMAIL: Final = "jane.canary@example.com"
CARD: Final = "4111 1111 1111 1111"
CANARIES: Final = (EMAIL, CARD, CARD.replace(" ", ""), "jane.canary")
KEY: Final = "sk-ant-api03-StorageCanary0123456789abcdefABCDEF"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    echo = Reply(text=f"Noted: I will write to {EMAIL} about the card {CARD}.\nDone.")
    with FakeProvider(Scenario(reply=echo)) as server:
        yield server


def _suite(tmp_path: Path, url: str) -> Path:
    prompt = f"Write to {EMAIL} about the card {CARD}."
    suite: dict[str, Any] = {
        "suite": "canary",
        "defaults": {
            "model": "claude-sonnet-4-6",
            "timeout_s": 30,
            "policy": {"extends": "agent_dispatch", "max_attempts": 2, "initial_delay_s": 0.05},
        },
        "adapters": {
            "anthropic-api": {"api_key_env": "ANTHROPIC_API_KEY", "base_url": url},
            "agent-runtime": {
                "agent": "backstay.runtime.reference:make_agent",
                "options": {"base_url": url},
                "api_key_env": "ANTHROPIC_API_KEY",
            },
        },
        "tasks": [
            {"id": "api", "adapter": "anthropic-api", "prompt": prompt},
            {"id": "streamed", "adapter": "anthropic-api", "prompt": prompt, "runs": 2},
            {"id": "agent", "adapter": "agent-runtime", "prompt": prompt},
        ],
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def _files(state: Path) -> list[Path]:
    return [path for path in state.rglob("*") if path.is_file()]


def _assert_no_canary_in_files(state: Path) -> None:
    files = _files(state)
    assert any(p.name == "agent.log" for p in files)
    assert any(p.name == "stdout.log" for p in files)
    for path in files:
        data = path.read_bytes()
        for canary in CANARIES:
            assert canary.encode() not in data, f"{canary!r} in {path}"


def _assert_no_canary_in_sqlite(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        assert tables
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):  # noqa: S608 - names from the file
                text = " ".join(str(value) for value in row)
                for canary in CANARIES:
                    assert canary not in text, f"{canary!r} in {path}:{table}"


def _assert_private(state: Path) -> None:
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    for path in state.rglob("*"):
        if path.is_symlink() or "workspace" in path.relative_to(state).parts[1:]:
            continue  # the agent's own workspace files are its business
        mode = stat.S_IMODE(path.stat().st_mode)
        wanted = 0o700 if path.is_dir() else 0o600
        assert mode == wanted, f"{path}: {oct(mode)}"


def test_a_sqlite_batch_keeps_no_canary_anywhere_and_its_files_private(
    tmp_path: Path, fake: FakeProvider
) -> None:
    os.umask(0o022)  # the usual umask: the modes must not come from it
    state = tmp_path / "state"
    result = invoke("batch", _suite(tmp_path, fake.url), "--state-dir", state)
    assert result.exit_code == ALL_SUCCEEDED, result.output
    report = invoke("report", "--state-dir", state)
    assert report.exit_code == 0, report.output
    assert fake.stats().requests >= 4
    names = {p.name for p in _files(state)}
    assert {"state.sqlite", "batch.json", "events.jsonl", "report.html", "metrics.json"} <= names
    _assert_no_canary_in_sqlite(state / "state.sqlite")
    with sqlite3.connect(state / "state.sqlite") as conn:
        plans = [r[0] for r in conn.execute("SELECT plan FROM agent_runs")]
    assert plans
    assert all("[EMAIL]" in plan and "[CARD]" in plan for plan in plans)
    _assert_no_canary_in_files(state)
    _assert_private(state)
    for suffix in ("-wal", "-shm"):
        sidecar = state / f"state.sqlite{suffix}"
        if sidecar.exists():
            assert stat.S_IMODE(sidecar.stat().st_mode) == 0o600


def _redis_value(client: redis.Redis, key: bytes) -> str:
    """Every part of the value at ``key``, as text (ASCII shows as itself)."""
    kind = client.type(key)
    read: dict[bytes, Any] = {
        b"string": lambda: client.get(key),
        b"hash": lambda: client.hgetall(key),
        b"list": lambda: client.lrange(key, 0, -1),
        b"set": lambda: client.smembers(key),
        b"zset": lambda: client.zrange(key, 0, -1, withscores=True),
        b"stream": lambda: client.xrange(key),
    }
    assert kind in read, kind
    return repr(read[kind]())


def test_a_redis_batch_keeps_no_canary_in_any_key_or_file(
    tmp_path: Path, fake: FakeProvider, redis_location: StoreLocation
) -> None:
    assert redis_location.url is not None
    state = tmp_path / "state"
    suite = _suite(tmp_path, fake.url)
    result = invoke("batch", suite, "--state-dir", state, "--store", redis_location.url)
    assert result.exit_code == ALL_SUCCEEDED, result.output
    client = redis.Redis.from_url(redis_location.url.split("?")[0])
    keys = [k for k in client.scan_iter(count=1000) if redis_location.namespace.encode() in k]
    assert keys
    for key in keys:
        value = _redis_value(client, key)
        for canary in CANARIES:
            assert canary not in value, f"{canary!r} in Redis key {key!r}"
    client.close()
    _assert_no_canary_in_files(state)
    for path in state.rglob("state.sqlite"):
        _assert_no_canary_in_sqlite(path)
    _assert_private(state)
