"""``backstay status`` on a plain ``redis://`` store reads the batch without redis-py
(``store.redis.status_reads``): on a real ``redis-server`` its output — table, counts,
hints, warnings, errors — is the very one the full stores (redis-py, in ``wait`` mode)
give, for every selection."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from tests.cli.support import invoke
from tests.store.summary_support import fill, specs

from backstay.engine.registration import Registration, ids_digest
from backstay.idempotency.owners import default_owner
from backstay.store.location import StoreLocation
from backstay.store.redis import status_reads
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.operations import RedisOperationStore
from backstay.store.redis.tasks import RedisTaskStore

AT = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
SELECTIONS = [
    [],
    ["--all"],
    ["--limit", "2"],
    ["--state", "failed", "--state", "paused"],
    ["--state", "interrupted"],
    ["--state", "running"],
    ["--task", "ok-*"],
    ["--task", "nothing-*"],
    ["--state", "cancelled"],
]


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv("BACKSTAY_STORE", raising=False)
    monkeypatch.setenv("COLUMNS", "160")


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each ``status`` read its batch without redis-py, in order."""
    seen: list[bool] = []
    real = status_reads.open_status_reads

    def spy(*args: Any, **kwargs: Any) -> status_reads.RespReads | None:
        found = real(*args, **kwargs)
        seen.append(found is not None)
        return found

    monkeypatch.setattr(status_reads, "open_status_reads", spy)
    return seen


@pytest.fixture
def batch(redis_location: StoreLocation, tmp_path: Path) -> Iterator[list[str]]:
    conn = RedisConnection(redis_location)
    try:
        made = {spec.task_id: spec for spec in fill(RedisTaskStore(conn), tmp_path)}
        RedisOperationStore(conn).claim(made["gone-2"].operation_id, default_owner(), 600.0)
        yield ["--state-dir", str(tmp_path / "state"), "--store", str(redis_location.url)]
    finally:
        conn.close()


def _both(*args: str) -> tuple[Result, Result]:
    """``status ARGS`` (the last two: ``--store URL``), and the same with the store named by
    ``backstay.yaml`` in ``wait`` mode instead, which redis-py reads."""
    light = invoke("status", *args)
    *rest, flag, url = args
    assert flag == "--store"
    config = Path("backstay.yaml")
    config.write_text(f"store: {{url: '{url}', unavailable: wait}}\n", encoding="utf-8")
    try:
        full = invoke("status", *rest)
    finally:
        config.unlink()
    return light, full


@pytest.mark.parametrize("selection", SELECTIONS, ids=" ".join)
def test_the_output_is_the_full_stores(
    batch: list[str], opened: list[bool], selection: list[str]
) -> None:
    light, full = _both(*selection, *batch)
    assert opened == [True, False]  # wait mode: left to redis-py
    assert (light.exit_code, light.stdout) == (full.exit_code, full.stdout), full.output
    assert light.stderr == full.stderr
    assert light.exit_code == 0
    assert "backstay status" in light.stdout


def test_a_namespace_without_a_batch_is_refused_alike(
    redis_location: StoreLocation, tmp_path: Path, opened: list[bool]
) -> None:
    args = ["--state-dir", str(tmp_path / "state"), "--store", str(redis_location.url)]
    first = invoke("status", *args)  # not indexed yet: the full stores read (and index) it
    light, full = _both(*args)
    assert opened == [False, True, False]
    assert first.exit_code == light.exit_code == full.exit_code == 2
    assert "holds no batch" in light.stderr
    assert light.stderr == full.stderr == first.stderr


def test_a_batch_being_recorded_shows_its_header_alike(
    redis_location: StoreLocation, tmp_path: Path, opened: list[bool]
) -> None:
    made = specs(tmp_path, ["page-1", "page-2", "page-3"])
    header = Registration(
        total=3,
        recorded=1,
        ids_sha256=ids_digest([s.operation_id for s in made]),
        source='{"suite_file": "s.yaml"}',
        started_at=AT,
    )
    conn = RedisConnection(redis_location)
    try:
        RedisTaskStore(conn).register_page(made[:1], at=AT, header=header)
    finally:
        conn.close()
    args = ["--state-dir", str(tmp_path / "state"), "--store", str(redis_location.url)]
    light, full = _both(*args)
    assert opened == [True, False]
    assert (light.exit_code, light.stdout) == (full.exit_code, full.stdout), full.output
    assert "recording: 1 of the batch's 3 tasks recorded so far" in light.stdout


def test_json_reads_through_the_full_stores(batch: list[str], opened: list[bool]) -> None:
    result = invoke("status", *batch, "--json")
    assert result.exit_code == 0, result.output
    assert opened == []
    assert '"by_state"' in result.stdout
