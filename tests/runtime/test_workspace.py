"""The file tools' workspace: paths walked one component at a time, no symlink followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backstay.runtime import SecurityViolation
from backstay.runtime.workspace import Workspace


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Workspace, Path]:
    """A workspace ``ws`` and, beside it, a directory ``out`` holding ``secret.txt``."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "secret.txt").write_text("OUTSIDE")
    return Workspace(tmp_path / "ws"), tmp_path


def _refused(call: object, *args: object) -> str:
    assert callable(call)
    with pytest.raises(SecurityViolation) as err:
        call(*args)
    assert err.value.failure.code == "ERR_SANDBOX_ESCAPE"
    return err.value.failure.message


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("", "non-empty"),
        ("/etc/passwd", "absolute"),
        ("../x", "'..'"),
        ("a/../../x", "'..'"),
        ("a/../b", "'..'"),
        ("a\x00b", "NUL"),
    ],
)
def test_a_path_that_could_leave_is_refused_before_any_open(path: str, says: str) -> None:
    message = _refused(Workspace.parts, path)
    assert says in message
    if path:
        assert repr(path) in message


def test_dot_and_empty_components_are_dropped() -> None:
    assert Workspace.parts("./a//b/.") == ("a", "b")
    assert Workspace.parts(".") == ()


def test_a_symlinked_directory_on_the_path_is_refused_even_when_it_points_inside(
    layout: tuple[Workspace, Path],
) -> None:
    ws, base = layout
    (ws.root / "real").mkdir()
    (ws.root / "real" / "f.txt").write_text("in")
    (ws.root / "inner").symlink_to(ws.root / "real")
    (ws.root / "outer").symlink_to(base / "out")
    for path in ("inner/f.txt", "outer/secret.txt"):
        message = _refused(ws.read_bytes, path, 100)
        assert repr(path) in message
        assert "symlink" in message
    _refused(ws.write_bytes, "outer/new.txt", b"x")
    _refused(ws.list_names, "outer")
    assert sorted(os.listdir(base / "out")) == ["secret.txt"]


def test_a_symlink_as_the_last_component_is_neither_read_nor_written_through(
    layout: tuple[Workspace, Path],
) -> None:
    ws, base = layout
    (ws.root / "link").symlink_to(base / "out" / "secret.txt")
    (ws.root / "dangling").symlink_to(base / "out" / "created.txt")
    _refused(ws.read_bytes, "link", 100)
    _refused(ws.write_bytes, "link", b"x")
    _refused(ws.write_bytes, "dangling", b"x")
    assert (base / "out" / "secret.txt").read_text() == "OUTSIDE"
    assert not (base / "out" / "created.txt").exists()


def test_write_creates_the_missing_directories_and_replaces_the_content(
    layout: tuple[Workspace, Path],
) -> None:
    ws, _ = layout
    ws.write_bytes("a/b/c.txt", b"a long first content")
    ws.write_bytes("a/b/c.txt", b"short")
    assert (ws.root / "a" / "b" / "c.txt").read_bytes() == b"short"
    assert ws.read_bytes("a/b/c.txt", 3) == b"sho"


def test_a_directory_is_listed_without_following_its_symlinks(
    layout: tuple[Workspace, Path],
) -> None:
    ws, base = layout
    (ws.root / "d").mkdir()
    (ws.root / "f.txt").write_text("x")
    (ws.root / "link").symlink_to(base / "out")
    assert ws.list_names(".") == ["d/", "f.txt", "link"]
    assert ws.list_names("d") == []


def test_a_fifo_is_refused_without_blocking(layout: tuple[Workspace, Path]) -> None:
    ws, _ = layout
    os.mkfifo(ws.root / "pipe")
    with pytest.raises(OSError, match="not a regular file"):
        ws.read_bytes("pipe", 10)
    with pytest.raises(OSError, match="No such device"):  # no reader: ENXIO; never blocks
        ws.write_bytes("pipe", b"x")


def test_a_directory_or_a_missing_file_is_an_ordinary_error(
    layout: tuple[Workspace, Path],
) -> None:
    ws, _ = layout
    (ws.root / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        ws.read_bytes("d", 10)
    with pytest.raises(IsADirectoryError):
        ws.write_bytes("d", b"x")
    with pytest.raises(FileNotFoundError):
        ws.read_bytes("nope/x.txt", 10)
    with pytest.raises(FileNotFoundError):
        ws.list_names("nope")
