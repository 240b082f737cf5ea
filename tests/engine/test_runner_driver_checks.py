"""Each task's driver is built with its spec's settings checked, but a setting that passed
for an earlier task of the engine is not checked again (``Engine._driver``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.engine.support import OK, ScriptedAdapter, engine, spec

from backstay.engine import TaskState
from backstay.engine import runner as runner_module


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []
    real = runner_module.check_settings

    def check(config: Any, *, adapter: Any) -> Any:
        seen.append(config)
        return real(config, adapter=adapter)

    monkeypatch.setattr(runner_module, "check_settings", check)
    return seen


def test_a_setting_is_checked_once_for_the_drivers_of_a_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _counting(monkeypatch)
    specs = [spec(tmp_path, f"t{i}", config={"k": "v"}) for i in range(5)]
    with engine(tmp_path / "s", ScriptedAdapter({f"t{i}": [OK] for i in range(5)})) as eng:
        summary = eng.run_sync(specs)
    assert summary.count(TaskState.SUCCEEDED) == 5
    # Once before the batch is recorded, once for the first driver; never per task.
    assert len(seen) == 2


def test_each_distinct_setting_is_checked_for_its_first_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _counting(monkeypatch)
    specs = [spec(tmp_path, f"t{i}", config={"k": f"v{i % 2}"}) for i in range(6)]
    with engine(tmp_path / "s", ScriptedAdapter({f"t{i}": [OK] for i in range(6)})) as eng:
        eng.run_sync(specs)
    assert sorted(c["k"] for c in seen) == ["v0", "v0", "v1", "v1"]
