"""``BatchRun.prepare``: a new run's folder (``0700`` whatever the umask) and its
workspace, empty or a whole copy of the template; a run already prepared is left as it
is; a copy a crash cut short is made again; a run whose parents are missing gets them."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest

from backstay.engine.suite_runs import BatchRun

if TYPE_CHECKING:
    from backstay.engine.task import TaskSpec


def _run(workspace: Path, template: Path | None = None) -> BatchRun:
    return BatchRun(spec=cast("TaskSpec", SimpleNamespace(workspace=workspace)), template=template)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def stingy_umask() -> Iterator[int]:
    before = os.umask(0o277)  # takes the owner's write bit away too
    try:
        yield 0o277
    finally:
        os.umask(before)


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_new_run_gets_its_private_folder_and_an_empty_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "runs" / "run_01" / "workspace"
    (tmp_path / "runs").mkdir()
    assert _run(workspace).prepare() is True
    assert _tree(tmp_path / "runs") == ["run_01", "run_01/workspace"]
    assert _mode(workspace.parent) == 0o700
    assert _mode(workspace) == 0o700 & ~os.umask(os.umask(0))


def test_the_run_folder_is_private_whatever_the_umask(tmp_path: Path, stingy_umask: int) -> None:
    workspace = tmp_path / "run_01" / "workspace"
    assert _run(workspace).prepare() is True
    assert _mode(workspace.parent) == 0o700
    assert _mode(workspace) == 0o700 & ~stingy_umask  # as ever: the umask's, like a copy


def test_missing_parents_are_made_private(tmp_path: Path, stingy_umask: int) -> None:
    workspace = tmp_path / "a" / "b" / "run_01" / "workspace"
    assert _run(workspace).prepare() is True
    for folder in (tmp_path / "a", tmp_path / "a" / "b", workspace.parent):
        assert _mode(folder) == 0o700
    assert workspace.is_dir()


def test_a_prepared_run_is_left_as_it_is(tmp_path: Path) -> None:
    workspace = tmp_path / "run_01" / "workspace"
    assert _run(workspace).prepare() is True
    (workspace / "edited.txt").write_text("mine", encoding="utf-8")
    assert _run(workspace).prepare() is False
    assert _run(workspace, template=tmp_path).prepare() is False
    assert (workspace / "edited.txt").read_text(encoding="utf-8") == "mine"


@pytest.mark.parametrize("with_template", [False, True])
def test_a_run_folder_left_by_a_crash_is_finished(tmp_path: Path, with_template: bool) -> None:
    template = tmp_path / "template"
    (template / "src").mkdir(parents=True)
    (template / "src" / "a.txt").write_text("a", encoding="utf-8")
    run_dir = tmp_path / "runs" / "run_01"
    (run_dir / ".workspace.partial").mkdir(parents=True)  # a copy cut short
    (run_dir / ".workspace.partial" / "half").write_text("", encoding="utf-8")
    workspace = run_dir / "workspace"
    assert _run(workspace, template if with_template else None).prepare() is True
    assert _tree(run_dir) == (
        ["workspace", "workspace/src", "workspace/src/a.txt"] if with_template else ["workspace"]
    )


def test_a_new_run_gets_a_whole_copy_of_the_template(tmp_path: Path) -> None:
    template = tmp_path / "template"
    (template / "src").mkdir(parents=True)
    (template / "src" / "main.py").write_text("print(1)", encoding="utf-8")
    os.symlink("main.py", template / "src" / "link.py")
    workspace = tmp_path / "runs" / "run_01" / "workspace"
    (tmp_path / "runs").mkdir()
    assert _run(workspace, template).prepare() is True
    assert _tree(workspace.parent) == [
        "workspace",
        "workspace/src",
        "workspace/src/link.py",
        "workspace/src/main.py",
    ]
    assert os.readlink(workspace / "src" / "link.py") == "main.py"
    assert _mode(workspace.parent) == 0o700


def test_a_run_folder_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "run_01").write_text("", encoding="utf-8")
    with pytest.raises(FileExistsError):
        _run(tmp_path / "run_01" / "workspace").prepare()
