"""What ``status`` and ``health`` say of a batch whose runs are still being recorded a page
at a time (or whose runner stopped while recording them): how many of its tasks are
recorded, and that ``resume`` records the rest; on SQLite and on Redis (health's reads
without redis-py included)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

import pytest
from tests.cli.support import invoke
from tests.engine.support import ScriptedAdapter, engine, spec

from backstay.engine import registration
from backstay.engine.registration import EarlyStart, PageFeed
from backstay.engine.stores import StoreBundle
from backstay.store.location import STORE_ENV_VAR, StoreLocation, parse_store
from backstay.store.open import open_stores

TASKS: Final = 5
FIRST_PAGE: Final = 2


@pytest.fixture(params=["sqlite", "redis"])
def store_args(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.delenv(STORE_ENV_VAR, raising=False)
    if request.param == "sqlite":
        return []
    location: StoreLocation = request.getfixturevalue("redis_location")
    return ["--store", str(location.url)]


def _stores(state_dir: Path, args: list[str]) -> StoreBundle | None:
    return open_stores(parse_store(args[1]), state_dir=state_dir, secrets={}) if args else None


def _first_page_only(state_dir: Path, args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of TASKS whose runner recorded its first page only (as one killed then)."""
    monkeypatch.setattr(registration, "PAGE", FIRST_PAGE)
    state_dir.mkdir()
    with engine(state_dir, ScriptedAdapter(), stores=_stores(state_dir, args)) as eng:
        specs = [spec(state_dir, f"t{i}") for i in range(TASKS)]
        order = [s.operation_id for s in specs]
        PageFeed(eng.store, specs, order, early=EarlyStart(), at=eng.clock.now()).record_next()


def test_status_says_how_many_tasks_are_recorded(
    tmp_path: Path, store_args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state_dir = tmp_path / "state"
    _first_page_only(state_dir, store_args, monkeypatch)
    result = invoke("status", "--state-dir", state_dir, *store_args)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"{FIRST_PAGE} tasks: {FIRST_PAGE} pending" in text
    assert f"recording: {FIRST_PAGE} of the batch's {TASKS} tasks recorded so far" in text
    assert "backstay resume --state-dir" in text


def test_status_json_says_how_many_tasks_are_recorded(
    tmp_path: Path, store_args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state_dir = tmp_path / "state"
    _first_page_only(state_dir, store_args, monkeypatch)
    result = invoke("status", "--state-dir", state_dir, "--json", *store_args)
    document = json.loads(result.stdout)
    assert document["recording"] == {"recorded": FIRST_PAGE, "total": TASKS}
    assert document["total"] == FIRST_PAGE


def test_health_warns_while_a_batch_is_not_wholly_recorded(
    tmp_path: Path, store_args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state_dir = tmp_path / "state"
    _first_page_only(state_dir, store_args, monkeypatch)
    result = invoke("health", "--state-dir", state_dir, "--json", *store_args)
    report = json.loads(result.stdout)
    assert report["status"] == "warn"
    (check,) = report["checks"]["tasks:recorded"]
    assert check["observedValue"] == FIRST_PAGE
    assert f"of the batch's {TASKS} tasks recorded" in check["output"]


def test_a_wholly_recorded_batch_has_no_recording_line_or_check(
    tmp_path: Path, store_args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state_dir = tmp_path / "state"
    _first_page_only(state_dir, store_args, monkeypatch)
    with engine(state_dir, ScriptedAdapter(), stores=_stores(state_dir, store_args)) as eng:
        specs = [spec(state_dir, f"t{i}") for i in range(TASKS)]
        eng.finish_registration(specs, early=EarlyStart())
    status = invoke("status", "--state-dir", state_dir, *store_args)
    assert "recording" not in status.output
    document = json.loads(invoke("status", "--state-dir", state_dir, "--json", *store_args).stdout)
    assert "recording" not in document
    health = json.loads(invoke("health", "--state-dir", state_dir, "--json", *store_args).stdout)
    assert "tasks:recorded" not in health["checks"]
