"""The runs of a suite's batch (``SuiteBatch.runs``, ``SuiteBatch.specs``) as sequences
that make each run's spec when it is asked for.

A suite's runs come in families, one a task and tier: runs 1 to ``runs``, whose specs
differ from the first's only in their run number and their workspace
(``<run_dir>/run_NN/workspace``). A ``RunFamily`` keeps its first spec, built and checked
whole; ``SuiteRuns[i]`` and ``SuiteSpecs[i]`` make run ``i`` from it, and
``SuiteSpecs.operation_ids()`` gives every run's operation id without making a spec. So a
batch of 100,000 runs of a few tasks holds a few specs, not 100,000, and the engine checks
one spec a family (``backstay.engine.registration.SpecFamilies``) before anything runs.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, overload

from backstay._private import PRIVATE_DIR, make_private_dirs, new_private_dir

# The task specs are imported where a spec is made: the module loads with ``suite_batch``.
if TYPE_CHECKING:
    from backstay.engine.task import TaskSpec

__all__ = [
    "WORKSPACE_DIR",
    "BatchRun",
    "RunFamily",
    "SuiteRuns",
    "SuiteSpecs",
    "prepare_workspace",
]

WORKSPACE_DIR: Final = "workspace"
_PARTIAL: Final = ".workspace.partial"
_FIRST_RUN: Final = "run_01"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BatchRun:
    """One run of the batch: its spec, and the folder its workspace is copied from
    (``None``: it starts in an empty one)."""

    spec: TaskSpec
    template: Path | None

    def prepare(self) -> bool:
        """Make the workspace if it does not exist yet; whether it was made now."""
        return prepare_workspace(self.spec.workspace, self.template)


def prepare_workspace(workspace: Path, template: Path | None) -> bool:
    """``BatchRun.prepare`` of the run whose workspace is ``workspace`` and template
    ``template``, its spec not needed (``SuiteRuns.workspaces``)."""
    partial = workspace.with_name(_PARTIAL)
    if not new_private_dir(workspace.parent):  # a new run's folder has nothing to look at
        if workspace.is_dir():
            return False
        if partial.exists():
            shutil.rmtree(partial)  # left by a copy a crash cut short
        make_private_dirs(workspace.parent)
    if template is None:
        os.mkdir(workspace, PRIVATE_DIR)  # an empty folder is made whole or not at all
    else:
        shutil.copytree(template, partial, symlinks=True)
        partial.rename(workspace)  # a copy is only ever seen whole
    return True


def _another_run(first: TaskSpec, run: int, workspace: Path) -> TaskSpec:
    """``dataclasses.replace(first, run=run, workspace=workspace)`` without its checks run
    again: the other runs of a task and tier differ from its first only in their run
    number (the suite's, 1 or more) and their workspace (a path made from it), which pass
    the spec's checks whenever the first's pass."""
    other = object.__new__(type(first))
    for name in _spec_fields():
        object.__setattr__(other, name, getattr(first, name))
    object.__setattr__(other, "run", run)
    object.__setattr__(other, "workspace", workspace)
    return other


@functools.cache
def _spec_fields() -> tuple[str, ...]:
    from backstay.engine.task import TaskSpec  # noqa: PLC0415 - see the imports

    return tuple(field.name for field in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunFamily:
    """Runs 1 to ``runs`` of one task and tier, the batch's runs ``start`` to ``start +
    runs``: ``first`` is run 1's spec (its workspace ``<run_dir>/run_01/workspace``)."""

    start: int
    first: TaskSpec
    runs: int
    template: Path | None
    run_dir: str

    def spec(self, run: int) -> TaskSpec:
        """Run ``run``'s spec (1 to ``runs``)."""
        if run == 1:
            return self.first
        return _another_run(self.first, run, self.workspace(run))

    def workspace(self, run: int) -> Path:
        """Run ``run``'s workspace, its spec's, without making the spec."""
        if run == 1:
            return self.first.workspace
        return Path(f"{self.run_dir}/run_{run:02d}/{WORKSPACE_DIR}")

    def operation_ids(self) -> list[str]:
        """Every run's operation id, in order: ``first``'s with its run number changed."""
        whole = self.first.operation_id
        if not whole.endswith(_FIRST_RUN):  # pragma: no cover - TaskSpec.operation_id's form
            raise ValueError(f"unexpected operation id {whole!r}")
        prefix = whole[: -len(_FIRST_RUN)]
        return [f"{prefix}run_{n:02d}" for n in range(1, self.runs + 1)]


class _Runs:
    """Positions ``0`` to ``len - 1`` over ``families`` (in order, each ``start`` the
    total of the runs before it)."""

    def __init__(self, families: tuple[RunFamily, ...]) -> None:
        self.families = families
        self._starts = [family.start for family in families]
        self._len = sum(family.runs for family in families)

    def __len__(self) -> int:
        return self._len

    def _at(self, index: int) -> tuple[RunFamily, int]:
        """The family of run ``index`` (negative: from the end) and its run number."""
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(f"run {index} of a batch of {self._len}")
        family = self.families[bisect.bisect_right(self._starts, index) - 1]
        return family, index - family.start + 1


class SuiteSpecs(_Runs, Sequence["TaskSpec"]):
    """Every run's spec, in order, each made when asked for (module docstring); a
    ``SpecFamilies`` for the engine."""

    def __init__(self, families: tuple[RunFamily, ...]) -> None:
        super().__init__(families)
        self._ids: list[str] | None = None

    @overload
    def __getitem__(self, index: int) -> TaskSpec: ...
    @overload
    def __getitem__(self, index: slice) -> list[TaskSpec]: ...
    def __getitem__(self, index: int | slice) -> TaskSpec | list[TaskSpec]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._len))]
        family, run = self._at(index)
        return family.spec(run)

    def __iter__(self) -> Iterator[TaskSpec]:
        for family in self.families:
            for run in range(1, family.runs + 1):
                yield family.spec(run)

    def representatives(self) -> tuple[TaskSpec, ...]:
        """Each family's first spec, in order."""
        return tuple(family.first for family in self.families)

    def operation_ids(self) -> list[str]:
        """Every run's operation id, in order (made once)."""
        if self._ids is None:
            self._ids = [i for family in self.families for i in family.operation_ids()]
        return self._ids


class SuiteRuns(_Runs, Sequence[BatchRun]):
    """Every run of the batch (``BatchRun``), in order, each made when asked for."""

    def __init__(self, families: tuple[RunFamily, ...]) -> None:
        super().__init__(families)
        self.specs = SuiteSpecs(families)

    @overload
    def __getitem__(self, index: int) -> BatchRun: ...
    @overload
    def __getitem__(self, index: slice) -> list[BatchRun]: ...
    def __getitem__(self, index: int | slice) -> BatchRun | list[BatchRun]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._len))]
        family, run = self._at(index)
        return BatchRun(spec=family.spec(run), template=family.template)

    def __iter__(self) -> Iterator[BatchRun]:
        for family in self.families:
            for run in range(1, family.runs + 1):
                yield BatchRun(spec=family.spec(run), template=family.template)

    def workspaces(self, start: int, stop: int) -> Iterator[tuple[Path, Path | None]]:
        """The workspace and template of each of runs ``start`` to ``stop`` (as a slice
        takes them), without making their specs: what ``BatchRun.prepare`` needs."""
        for index in range(*slice(start, stop).indices(self._len)):
            family, run = self._at(index)
            yield family.workspace(run), family.template
