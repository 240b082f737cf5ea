"""The collector while a batch runs: what lives is frozen, collections are fewer, and both
are put back afterwards; ``backstay batch`` and ``backstay resume`` run their tasks so,
and ``backstay run`` its one run."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
from tests.cli.support import DONE, invoke, write_suite

from backstay.adapters.base import BaseAdapter
from backstay.cli._batch_gc import BATCH_GEN0_THRESHOLD, collector_for_batch
from backstay.cli._state import ALL_SUCCEEDED, SOME_FAILED
from backstay.engine.runner import Engine

FAILS_ONCE: Final = [[{"error": "context_overflow"}], DONE]


def test_a_batch_freezes_what_lives_and_raises_the_youngest_threshold() -> None:
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    alive = [object() for _ in range(10)]
    with collector_for_batch():
        assert gc.get_freeze_count() > frozen_before
        assert gc.get_threshold() == (max(before[0], BATCH_GEN0_THRESHOLD), *before[1:])
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert len(alive) == 10


def test_the_settings_are_put_back_when_the_batch_raises() -> None:
    before = gc.get_threshold()
    with pytest.raises(KeyboardInterrupt), collector_for_batch():
        raise KeyboardInterrupt
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_cycle_made_during_the_batch_is_still_collected() -> None:
    class Node:
        def __init__(self) -> None:
            self.other: Node | None = None

    with collector_for_batch():
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        assert gone() is not None  # a cycle: reference counting alone keeps it
        gc.collect()
        assert gone() is None


def _seen_while(
    monkeypatch: pytest.MonkeyPatch, method: str, owner: type = Engine
) -> list[tuple[tuple[int, int, int], int]]:
    """The collector's thresholds and frozen count each time ``owner.<method>`` runs."""
    seen: list[tuple[tuple[int, int, int], int]] = []
    original: Callable[..., Any] = getattr(owner, method)

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append((gc.get_threshold(), gc.get_freeze_count()))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(owner, method, recording)
    return seen


@pytest.mark.parametrize("command", ["batch", "resume"])
def test_batch_and_resume_run_their_tasks_with_the_batch_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.delenv("BACKSTAY_STORE", raising=False)
    suite = write_suite(tmp_path, ["ok", "bad"], scenarios={"bad": FAILS_ONCE})
    seen = _seen_while(monkeypatch, "run_sync" if command == "batch" else "resume_sync")
    assert invoke("batch", suite, "--state-dir", "state").exit_code == SOME_FAILED
    if command == "resume":
        assert invoke("retry", "bad/T0-run_01", "--state-dir", "state").exit_code == 0
        assert invoke("resume", "--state-dir", "state").exit_code == ALL_SUCCEEDED
    before = gc.get_threshold()
    ((threshold, frozen),) = seen
    assert threshold[0] == max(before[0], BATCH_GEN0_THRESHOLD)
    assert frozen > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_run_makes_its_run_with_the_batch_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    (tmp_path / "prompt.md").write_text("solve it", encoding="utf-8")
    (tmp_path / "ws").mkdir()
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("{attempts: [[{result: done}]]}", encoding="utf-8")
    seen = _seen_while(monkeypatch, "run", BaseAdapter)
    args = ["--adapter", "mock", "--model", "m", "--prompt-file", "prompt.md"]
    args += ["--workspace", "ws", "--output-dir", "out", "--adapter-option"]
    done = invoke("run", *args, f"scenario={scenario}", "--policy", "none")
    assert done.exit_code == 0, done.output
    before = gc.get_threshold()
    ((threshold, frozen),) = seen
    assert threshold[0] == max(before[0], BATCH_GEN0_THRESHOLD)
    assert frozen > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
