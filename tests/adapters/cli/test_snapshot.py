"""``WorkspaceSnapshot`` on real folders: what a restore removes, puts back and leaves."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from backstay.adapters.cli.snapshot import MANIFEST_NAME, WorkspaceSnapshot
from backstay.errors import WorkspaceSnapshotError


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    (workspace / "src" / "deep").mkdir(parents=True)
    (workspace / "notes.txt").write_text("line 1\n")
    (workspace / "src" / "main.py").write_text("print('hi')\n")
    (workspace / "src" / "deep" / "data.bin").write_bytes(bytes(range(256)))
    run = workspace / "run.sh"
    run.write_text("#!/bin/sh\necho run\n")
    run.chmod(0o755)
    (workspace / "empty").mkdir()
    return workspace


def _tree(root: Path) -> dict[str, tuple[str, int, bytes | str]]:
    """Every entry under ``root``: kind, mode and content (a link's target)."""
    out: dict[str, tuple[str, int, bytes | str]] = {}
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            info = path.lstat()
            key = path.relative_to(root).as_posix()
            if stat.S_ISLNK(info.st_mode):
                out[key] = ("link", 0, os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                out[key] = ("dir", stat.S_IMODE(info.st_mode), b"")
            else:
                out[key] = ("file", stat.S_IMODE(info.st_mode), path.read_bytes())
    return out


def test_a_restore_removes_what_the_attempt_added(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    before = _tree(workspace)
    snapshot = WorkspaceSnapshot.take(workspace, tmp_path / "snap")
    (workspace / "added.txt").write_text("new")
    (workspace / "new_dir" / "inner").mkdir(parents=True)
    (workspace / "new_dir" / "inner" / "f").write_text("x")
    (workspace / "src" / "extra.py").write_text("extra")
    snapshot.restore()
    assert _tree(workspace) == before


def test_a_restore_puts_back_changed_and_deleted_files_with_their_modes(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    before = _tree(workspace)
    snapshot = WorkspaceSnapshot.take(workspace, tmp_path / "snap")
    with (workspace / "notes.txt").open("a") as out:
        out.write("line 2\n")
    (workspace / "src" / "main.py").write_text("print('ho')\n")  # same size, other bytes
    (workspace / "src" / "deep" / "data.bin").unlink()
    (workspace / "run.sh").chmod(0o600)
    (workspace / "empty").rmdir()
    (workspace / "empty").write_text("now a file")
    snapshot.restore()
    assert _tree(workspace) == before


def test_a_deleted_folder_is_written_again(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    before = _tree(workspace)
    snapshot = WorkspaceSnapshot.take(workspace, tmp_path / "snap")
    for folder, _, files in os.walk(workspace / "src", topdown=False):
        for name in files:
            (Path(folder) / name).unlink()
        Path(folder).rmdir()
    snapshot.restore()
    assert _tree(workspace) == before


def test_symlinks_are_kept_as_links_and_never_followed(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the workspace")
    (workspace / "to_outside").symlink_to(outside)
    (workspace / "to_notes").symlink_to("notes.txt")
    (workspace / "dangling").symlink_to("missing.txt")
    before = _tree(workspace)
    snapshot = WorkspaceSnapshot.take(workspace, tmp_path / "snap")
    # The link's target folder was not copied: the snapshot holds the link, not its files.
    assert not (tmp_path / "snap" / "files" / "to_outside").exists()
    (workspace / "to_notes").unlink()
    (workspace / "to_notes").symlink_to("run.sh")
    (workspace / "dangling").unlink()
    (workspace / "to_outside").unlink()
    (workspace / "to_outside").mkdir()
    # A link the attempt added into the workspace is removed, and what it points to is not.
    (workspace / "added_link").symlink_to(outside / "secret.txt")
    snapshot.restore()
    assert _tree(workspace) == before
    assert (outside / "secret.txt").read_text() == "outside the workspace"


def test_the_snapshot_is_private(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    WorkspaceSnapshot.take(workspace, tmp_path / "snap")
    for folder, dirs, files in os.walk(tmp_path / "snap"):
        assert stat.S_IMODE(Path(folder).stat().st_mode) == 0o700, folder
        for name in files:
            assert stat.S_IMODE((Path(folder) / name).stat().st_mode) == 0o600, name
        assert dirs is not None


def test_a_workspace_over_the_size_limit_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    (workspace / "big.bin").write_bytes(b"\0" * 5000)
    with pytest.raises(WorkspaceSnapshotError, match=r"workspace .* snapshot limit \(4096 bytes"):
        WorkspaceSnapshot.take(workspace, tmp_path / "snap", max_bytes=4096)
    assert not (tmp_path / "snap").exists()
    assert list(tmp_path.iterdir()) == [workspace]


def test_a_workspace_over_the_entry_limit_is_refused(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with pytest.raises(WorkspaceSnapshotError, match="3 entries"):
        WorkspaceSnapshot.take(workspace, tmp_path / "snap", max_entries=3)


def test_an_excluded_folder_is_neither_copied_nor_touched(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    state = workspace / ".state"
    state.mkdir()
    (state / "before.db").write_text("kept")
    snapshot = WorkspaceSnapshot.take(workspace, state / "snap", exclude=[state])
    assert not (state / "snap" / "files" / ".state").exists()
    (state / "after.db").write_text("written during the attempt")
    snapshot.restore()
    assert (state / "after.db").read_text() == "written during the attempt"
    assert (state / "snap" / MANIFEST_NAME).is_file()


def test_a_snapshot_is_loaded_back_from_its_folder(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    before = _tree(workspace)
    taken = WorkspaceSnapshot.take(workspace, tmp_path / "snap")
    (workspace / "notes.txt").write_text("changed")
    loaded = WorkspaceSnapshot.load(workspace, tmp_path / "snap")
    assert loaded is not None
    assert loaded.entries == taken.entries
    assert loaded.size_bytes == taken.size_bytes > 0
    loaded.restore()
    assert _tree(workspace) == before
    assert WorkspaceSnapshot.load(workspace, tmp_path / "none") is None


def test_a_snapshot_cut_short_never_passes_for_one(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    partial = tmp_path / "snap.partial"
    partial.mkdir()
    (partial / MANIFEST_NAME).write_text("{")
    assert WorkspaceSnapshot.load(workspace, tmp_path / "snap") is None
    WorkspaceSnapshot.take(workspace, tmp_path / "snap")  # the leftover is replaced
    assert not partial.exists()


def test_a_read_only_folder_the_attempt_added_is_removed(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    before = _tree(workspace)
    snapshot = WorkspaceSnapshot.take(workspace, tmp_path / "snap")
    locked = workspace / "locked"
    locked.mkdir()
    (locked / "f").write_text("x")
    locked.chmod(0o500)
    snapshot.restore()
    assert _tree(workspace) == before


def test_a_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceSnapshotError, match="is not a folder"):
        WorkspaceSnapshot.take(tmp_path / "nope", tmp_path / "snap")


def test_a_folder_holding_the_workspace_excludes_nothing(tmp_path: Path) -> None:
    # A suite run's layout: state/runs/<task>/<tier>/run_NN/{workspace,workspace_snapshot}.
    state = tmp_path / "state"
    run = state / "runs" / "t" / "default" / "run_01"
    run.mkdir(parents=True)
    workspace = _workspace(run)
    before = _tree(workspace)
    snapshot = WorkspaceSnapshot.take(workspace, run / "workspace_snapshot", exclude=[state])
    assert len(snapshot.entries) == len(before)
    (workspace / "notes.txt").write_text("edited")
    (workspace / "added.txt").write_text("x")
    loaded = WorkspaceSnapshot.load(workspace, run / "workspace_snapshot", exclude=[state])
    assert loaded is not None
    loaded.restore()
    assert _tree(workspace) == before
