"""The built-in tools stay in their workspace; the shell tool has no network."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from backstay.runtime import SecurityViolation, Tool
from backstay.runtime.builtin_tools import workspace_tools
from backstay.runtime.sandbox import Workspace, sandbox_kind


def _tools(root: Path) -> dict[str, Tool]:
    return {t.name: t for t in workspace_tools(root)}


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a/../../x", ""])
def test_paths_out_of_the_workspace_are_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(SecurityViolation) as err:
        Workspace(tmp_path).resolve(path)
    assert err.value.failure.code == "ERR_SANDBOX_ESCAPE"


def test_a_symlink_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.txt").write_text("s")
    (tmp_path / "ws" / "link").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(SecurityViolation):
        _tools(tmp_path / "ws")["read_file"].fn(path="link")


def test_files_inside_the_workspace_are_read_written_and_listed(tmp_path: Path) -> None:
    tools = _tools(tmp_path)
    tools["write_file"].fn(path="d/notes.txt", content="hello")
    assert tools["read_file"].fn(path="d/notes.txt") == "hello"
    assert tools["list_dir"].fn(path=".") == ["d/"]


def test_the_shell_tool_runs_in_the_workspace(tmp_path: Path) -> None:
    if sandbox_kind() is None:
        pytest.skip("no sandbox on this machine (bubblewrap or unshare)")
    (tmp_path / "here.txt").write_text("x")
    result = asyncio.run(_tools(tmp_path)["shell"].fn(command="ls; echo $HOME"))
    assert result["exit_code"] == 0
    assert "here.txt" in result["output"]


def test_under_bubblewrap_the_shell_cannot_write_outside_the_workspace(tmp_path: Path) -> None:
    if sandbox_kind() != "bubblewrap":
        pytest.skip("bubblewrap is not installed (make sandbox)")
    (tmp_path / "ws").mkdir()
    outside = tmp_path / "outside.txt"
    shell = _tools(tmp_path / "ws")["shell"]
    result = asyncio.run(shell.fn(command=f"echo x > {outside}; echo y > inside.txt"))
    assert not outside.exists()
    assert (tmp_path / "ws" / "inside.txt").read_text() == "y\n"
    assert result["exit_code"] == 0
