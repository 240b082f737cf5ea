"""``WorkspaceMark``: a listing digest that tells whether an attempt changed a workspace."""

from __future__ import annotations

import os
from pathlib import Path

from backstay.fallback.workspace import WorkspaceMark


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print(1)\n")
    return root


def test_an_untouched_workspace_is_unchanged(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    before = WorkspaceMark.take(root)
    assert not WorkspaceMark.take(root).changed_since(before)


def test_a_new_file_is_a_change(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    before = WorkspaceMark.take(root)
    (root / "src" / "b.py").write_text("")
    assert WorkspaceMark.take(root).changed_since(before)


def test_an_edited_file_is_a_change(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    before = WorkspaceMark.take(root)
    path = root / "src" / "a.py"
    path.write_text("print(2)\n")  # same size: the modification time tells
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))
    assert WorkspaceMark.take(root).changed_since(before)


def test_a_deleted_file_is_a_change(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    before = WorkspaceMark.take(root)
    (root / "src" / "a.py").unlink()
    assert WorkspaceMark.take(root).changed_since(before)


def test_an_excluded_output_folder_and_agent_bookkeeping_are_not_changes(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    out = root / "out"
    out.mkdir()
    before = WorkspaceMark.take(root, exclude=[out])
    (out / "agent.log").write_text("log")
    (root / ".aider.chat.history.md").write_text("# aider chat")
    assert not WorkspaceMark.take(root, exclude=[out]).changed_since(before)


def test_a_workspace_past_the_limit_counts_as_changed(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    before = WorkspaceMark.take(root, limit=1)
    assert before.digest is None
    assert WorkspaceMark.take(root, limit=1).changed_since(before)


def test_a_missing_workspace_counts_as_changed(tmp_path: Path) -> None:
    before = WorkspaceMark.take(tmp_path / "nowhere")
    assert before.digest is None
    assert WorkspaceMark.take(tmp_path / "nowhere").changed_since(before)
