"""A batch checks each distinct setting of its specs once; a bad spec is still refused,
naming itself, before anything is recorded."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.engine.support import ScriptedAdapter, engine, spec

from backstay.engine._checked_settings import KEPT, CheckedSettings
from backstay.errors import ConfigError


class CountingAdapter(ScriptedAdapter):
    """Counts its settings checks; refuses ``{"bad": True}``."""

    def __init__(self) -> None:
        super().__init__()
        self.checks = 0

    def validate_config(self, config: Mapping[str, Any]) -> bool:
        self.checks += 1
        if config.get("bad"):
            raise ConfigError("is not a setting", where="bad")
        return super().validate_config(config)


def test_specs_with_equal_settings_are_checked_once(tmp_path: Path) -> None:
    adapter = CountingAdapter()
    specs = [spec(tmp_path, task_id=f"t{i}", config={"k": 1}) for i in range(30)]
    specs += [spec(tmp_path, task_id=f"u{i}", config={"k": 2}) for i in range(30)]
    with engine(tmp_path / "state", adapter) as eng:
        order = eng._checked(specs)  # what run() does before it records anything
        assert adapter.checks == 2  # one per distinct setting
        assert order == [s.operation_id for s in specs]
        summary = eng.run_sync(specs)
    assert summary.total == 60


def test_a_bad_spec_after_good_ones_is_refused_naming_itself(tmp_path: Path) -> None:
    adapter = CountingAdapter()
    specs = [spec(tmp_path, task_id=f"t{i}", config={"k": 1}) for i in range(5)]
    specs.append(spec(tmp_path, task_id="wrong", config={"k": 1, "bad": True}))
    with engine(tmp_path / "state", adapter) as eng:
        with pytest.raises(ConfigError, match="wrong") as refused:
            eng.run_sync(specs)
        assert "bad" in str(refused.value)
        assert eng.store.tasks() == ()  # nothing recorded
    assert adapter.calls == []


def test_a_refused_setting_is_not_remembered(tmp_path: Path) -> None:
    checked = CheckedSettings()
    bad = spec(tmp_path, config={"bad": True})
    assert not checked.known(bad)
    assert not checked.known(bad)  # still unknown: only passed() remembers


def test_settings_differing_in_any_part_are_not_known(tmp_path: Path) -> None:
    checked = CheckedSettings()
    checked.passed(spec(tmp_path, config={"k": 1}))
    assert checked.known(spec(tmp_path, task_id="other", config={"k": 1}))
    assert not checked.known(spec(tmp_path, config={"k": 2}))
    assert not checked.known(spec(tmp_path, config={"k": 1}, adapter="other"))
    assert not checked.known(spec(tmp_path, config={"k": 1}, limits={"max_turns": 3}))


def test_at_most_kept_settings_are_remembered(tmp_path: Path) -> None:
    checked = CheckedSettings()
    for i in range(KEPT + 5):
        checked.passed(spec(tmp_path, config={"k": i}))
    assert checked.known(spec(tmp_path, config={"k": KEPT - 1}))
    assert not checked.known(spec(tmp_path, config={"k": KEPT}))
