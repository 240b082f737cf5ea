"""``_sdk_gc``: within ``freezing()`` an SDK's first import runs with the collector paused
and freezes what it leaves alive; outside it, and for a module imported already, an import
is a plain one; the collector is running again afterwards, even when the import fails."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from backstay.adapters.api import _sdk_gc
from backstay.adapters.api.base import import_sdk
from backstay.cli._batch_gc import collector_for_batch
from backstay.errors import ConfigError

# A module making many objects that live (as an SDK's models do) and a cycle it drops.
HEAVY = """\
class Node:
    pass

KEPT = [[i, f"field{i}"] for i in range(20_000)]
_a, _b = Node(), Node()
_a.other, _b.other = _b, _a
del _a, _b
"""


@pytest.fixture
def modules(tmp_path: Path) -> Iterator[Path]:
    """A folder on ``sys.path`` for the test's modules; they are forgotten afterwards."""
    sys.path.insert(0, str(tmp_path))
    before = set(sys.modules)
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in set(sys.modules) - before:
            del sys.modules[name]
        gc.unfreeze()


def _write(folder: Path, name: str, text: str = HEAVY) -> str:
    (folder / f"{name}.py").write_text(text, encoding="utf-8")
    return name


class _Collections:
    """Counts the collector's passes while installed."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            self.count += 1


def _import_counting(name: str) -> int:
    seen = _Collections()
    gc.callbacks.append(seen)
    try:
        _sdk_gc.imported(name)
    finally:
        gc.callbacks.remove(seen)
    return seen.count


def test_within_freezing_the_import_is_not_collected_and_its_objects_are_frozen(
    modules: Path,
) -> None:
    gc.freeze()  # what lived before (the fixture unfreezes it)
    frozen = gc.get_freeze_count()
    with _sdk_gc.freezing():
        assert _import_counting(_write(modules, "sdk_one")) == 0
    assert gc.get_freeze_count() >= frozen + 20_000
    assert gc.isenabled()


def test_outside_freezing_an_import_is_a_plain_one(modules: Path) -> None:
    # The collector as a fresh interpreter has it, and no batch's freezing() open in this
    # process (a thread another test of this worker left may still be in one), so that a
    # plain import is collected as it goes.
    enabled, thresholds, depth = gc.isenabled(), gc.get_threshold(), _sdk_gc._DEPTH[0]
    gc.enable()
    gc.set_threshold(700, 10, 10)
    _sdk_gc._DEPTH[0] = 0
    try:
        frozen = gc.get_freeze_count()
        assert _import_counting(_write(modules, "sdk_two")) > 0  # collected as it goes
        assert gc.get_freeze_count() == frozen
        assert gc.isenabled()
    finally:
        _sdk_gc._DEPTH[0] += depth
        gc.set_threshold(*thresholds)
        if not enabled:
            gc.disable()


def test_a_module_imported_already_is_not_frozen_again(modules: Path) -> None:
    name = _write(modules, "sdk_three")
    _sdk_gc.imported(name)
    frozen = gc.get_freeze_count()
    with _sdk_gc.freezing():
        assert _sdk_gc.imported(name) is sys.modules[name]
    assert gc.get_freeze_count() == frozen


def test_the_collector_runs_again_after_a_failed_import(modules: Path) -> None:
    name = _write(modules, "sdk_broken", HEAVY + "raise ImportError('no')\n")
    with _sdk_gc.freezing(), pytest.raises(ImportError):
        _sdk_gc.imported(name)
    assert gc.isenabled()


def test_a_collector_paused_by_the_program_stays_paused(modules: Path) -> None:
    gc.disable()
    try:
        with _sdk_gc.freezing():
            _sdk_gc.imported(_write(modules, "sdk_four"))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_commands_run_imports_the_sdk_freezing(modules: Path) -> None:
    # backstay run, batch and resume run under collector_for_batch (tests/cli/test_batch_gc.py).
    with collector_for_batch():
        frozen = gc.get_freeze_count()
        import_sdk(_write(modules, "sdk_five"), adapter="x-api", extra="x")
        assert gc.get_freeze_count() >= frozen + 20_000
    assert gc.get_freeze_count() == 0  # everything unfrozen when the run ends


def test_a_missing_sdk_still_names_its_extra(modules: Path) -> None:
    with _sdk_gc.freezing(), pytest.raises(ConfigError, match=r"backstay\[x\]"):
        import_sdk("no_such_sdk_module", adapter="x-api", extra="x")
    assert gc.isenabled()
