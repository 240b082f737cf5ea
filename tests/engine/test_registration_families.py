"""A suite's batch (``SpecFamilies``) checked one spec a family of runs: the engine asks
each task and tier's first spec, takes the operation ids without making the specs, and
still refuses a bad task anywhere before anything is recorded or run."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.engine.support import ScriptedAdapter, clock, engine, spec

from backstay.config import Suite, SuiteTask
from backstay.engine import SuiteBatch, TaskSpec, TaskState
from backstay.engine.registration import EarlyStart, checked_families, ids_digest
from backstay.errors import ConfigError


def _suite(*tasks: tuple[str, str, int]) -> Suite:
    made = tuple(
        SuiteTask(id=task_id, adapter=adapter, model="m", prompt="do it", runs=runs)
        for task_id, adapter, runs in tasks
    )
    return Suite(name="families", tasks=made)


class _Families(Sequence[TaskSpec]):
    """Two families whose operation ids are given as the caller says (a wrong one too)."""

    def __init__(self, firsts: tuple[TaskSpec, ...], ids: list[str]) -> None:
        self.firsts = firsts
        self.ids = ids

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: Any) -> Any:  # pragma: no cover - never made
        raise AssertionError("a spec was made")

    def representatives(self) -> tuple[TaskSpec, ...]:
        return self.firsts

    def operation_ids(self) -> list[str]:
        return self.ids


def test_only_each_familys_first_spec_is_checked(tmp_path: Path) -> None:
    firsts = (spec(tmp_path, "a"), spec(tmp_path, "b"))
    checked: list[TaskSpec] = []
    order = checked_families(_Families(firsts, ["x:a:run_01", "x:a:run_02", "x:b:run_01"]),
                             checked.append)  # fmt: skip
    assert checked == list(firsts)
    assert order == ["x:a:run_01", "x:a:run_02", "x:b:run_01"]


def test_an_id_given_twice_is_refused_naming_its_place(tmp_path: Path) -> None:
    families = _Families((spec(tmp_path, "a"),), ["x:a:run_01", "x:a:run_02", "x:a:run_01"])
    with pytest.raises(ConfigError, match=r"specs\[2\].*'x:a:run_01' is given twice"):
        checked_families(families, lambda _spec: None)


def test_other_specs_are_left_to_the_check_of_each(tmp_path: Path) -> None:
    assert checked_families([spec(tmp_path, "a")], lambda _spec: None) is None


def test_the_digest_is_each_id_and_a_new_line_in_order() -> None:
    ids = [f"wf:t:run_{n:02d}" for n in range(1, 2001)]
    old = hashlib.sha256()
    for operation_id in ids:
        old.update(operation_id.encode() + b"\n")
    assert ids_digest(ids) == old.hexdigest()
    assert ids_digest([]) == hashlib.sha256().hexdigest()


def test_a_bad_task_after_thousands_of_runs_is_refused_before_anything_is_recorded(
    tmp_path: Path,
) -> None:
    suite = _suite(("a", "fake", 1000), ("b", "fake", 1000), ("bad", "nosuchadapter", 2))
    batch = SuiteBatch.open(suite, tmp_path / "state", environ={}, clock=clock())
    adapter = ScriptedAdapter()
    with engine(tmp_path / "state", adapter) as eng:
        with pytest.raises(ConfigError, match="nosuchadapter"):
            eng.run_sync(batch.specs, early=EarlyStart())
        assert eng.store.tasks() == ()
        assert eng.store.registration() is None  # type: ignore[attr-defined]
    assert adapter.calls == []


def test_a_suites_batch_runs_every_run_once_with_one_check_a_family(tmp_path: Path) -> None:
    suite = _suite(("a", "fake", 30), ("b", "fake", 20))
    batch = SuiteBatch.open(suite, tmp_path / "state", environ={}, clock=clock())
    adapter = ScriptedAdapter()
    with engine(tmp_path / "state", adapter) as eng:
        checks: list[str] = []
        check = eng._check

        def counted(one: TaskSpec) -> tuple[TaskSpec, Any]:
            checks.append(one.operation_id)
            return check(one)

        eng._check = counted  # type: ignore[method-assign,assignment]
        batch.prepare()
        summary = eng.run_sync(batch.specs, early=EarlyStart())
    assert summary.count(TaskState.SUCCEEDED) == 50
    assert sorted(call.operation_id for call in adapter.calls) == sorted(batch.operation_ids())
    # one a family before anything is recorded, one more when the first task is driven
    assert checks == [*(s.operation_id for s in batch.specs.representatives()), checks[-1]]
