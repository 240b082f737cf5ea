"""``Engine.run(specs, early=EarlyStart(...))``: a batch recorded a page at a time while
its first tasks run, on SQLite and on a real Redis; ``finish_registration`` records what
a cut-short recording left. (SIGKILL while recording: tests/engine/test_registration_kill.py.)"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pytest
from tests.engine.support import ScriptedAdapter, engine, spec

from backstay.engine import Engine, TaskSpec, TaskState
from backstay.engine import registration as paged
from backstay.engine.registration import EarlyStart, PagedRegistration, PageFeed, Registration
from backstay.errors import ConfigError
from backstay.store.location import StoreLocation
from backstay.store.open import open_stores
from backstay.testing import ScriptedCall

TASKS: Final = 10
Make = Callable[[ScriptedAdapter], Engine]
WAIT_S: Final = 30.0


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paged, "PAGE", 3)


@pytest.fixture(params=["sqlite", "redis"])
def make_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Make:
    def make(adapter: ScriptedAdapter) -> Engine:
        if request.param == "sqlite":
            return engine(tmp_path / "state", adapter)
        location: StoreLocation = request.getfixturevalue("redis_location")
        (tmp_path / "state").mkdir(exist_ok=True)
        stores = open_stores(location, state_dir=tmp_path / "state", secrets={})
        return engine(tmp_path / "state", adapter, stores=stores)

    return make


def _header(eng: Engine) -> Registration | None:
    assert isinstance(eng.store, PagedRegistration)
    return eng.store.registration()


def _specs(workspace: Path, n: int = TASKS) -> list[TaskSpec]:
    return [spec(workspace, f"t{i:02d}") for i in range(n)]


def test_the_first_task_runs_before_the_last_page_is_recorded(
    make_engine: Make, tmp_path: Path
) -> None:
    seen: list[tuple[int, int] | None] = []
    pages: list[tuple[int, int]] = []
    holder: dict[str, Engine] = {}
    dispatched = threading.Event()

    def on_dispatch(call: ScriptedCall) -> None:
        if not seen:
            store = holder["engine"].store
            assert isinstance(store, PagedRegistration)
            header = store.registration()
            seen.append(None if header is None else (header.recorded, header.total))
        dispatched.set()

    def before_page(start: int, stop: int) -> None:
        pages.append((start, stop))
        if start == 3:  # the second page waits for a first dispatch (at most WAIT_S)
            dispatched.wait(WAIT_S)

    adapter = ScriptedAdapter(on_dispatch=on_dispatch)
    with make_engine(adapter) as eng:
        holder["engine"] = eng
        early = EarlyStart(source="the suite", before_page=before_page)
        summary = eng.run_sync(_specs(tmp_path), early=early)
        assert _header(eng) is None
        assert [r.state for r in eng.store.tasks()] == [TaskState.SUCCEEDED] * TASKS
    assert seen[0] == (3, TASKS)  # the first page only
    assert pages == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert summary.total == TASKS
    assert sorted(c.operation_id for c in adapter.calls) == sorted(
        s.operation_id for s in _specs(tmp_path)
    )


def test_a_bad_spec_anywhere_is_refused_before_anything_is_recorded(
    make_engine: Make, tmp_path: Path
) -> None:
    specs = _specs(tmp_path)
    specs[-1] = spec(tmp_path, "bad", adapter="nosuchadapter")
    adapter = ScriptedAdapter()
    with make_engine(adapter) as eng:
        with pytest.raises(ConfigError):
            eng.run_sync(specs, early=EarlyStart())
        assert eng.store.tasks() == ()
        assert _header(eng) is None
    assert adapter.calls == []


def test_finish_registration_records_the_rest_and_the_tasks_run_on_resume(
    make_engine: Make, tmp_path: Path
) -> None:
    specs = _specs(tmp_path)
    adapter = ScriptedAdapter()
    with make_engine(adapter) as eng:
        order = [s.operation_id for s in specs]
        feed = PageFeed(eng.store, specs, order, early=EarlyStart(), at=eng.clock.now())
        feed.record_next()  # as a runner killed after its first page leaves it
        header = _header(eng)
        assert header is not None
        assert (header.recorded, header.total) == (3, TASKS)
        with pytest.raises(ConfigError, match="not the 10"):
            eng.finish_registration(specs[:-1], early=EarlyStart())
        assert eng.finish_registration(specs, early=EarlyStart()) == TASKS - 3
        assert _header(eng) is None
        assert eng.finish_registration(specs, early=EarlyStart()) == 0  # nothing left
        summary = eng.resume_sync()
    assert summary.total == TASKS
    assert len(adapter.calls) == TASKS
