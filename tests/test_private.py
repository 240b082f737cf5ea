"""``make_private_dirs``: the folders it makes are ``0700`` whatever the umask, whether
only the last one or several were missing; a folder already there keeps its mode; a path
through a file is refused. ``new_private_dir``: one folder, ``0700`` whatever the umask,
made only when its parent is there and it is not."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from backstay._private import make_private_dirs, new_private_dir


@pytest.fixture
def stingy_umask() -> Iterator[None]:
    before = os.umask(0o277)  # takes the owner's write bit away too
    try:
        yield
    finally:
        os.umask(before)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_last_missing_folder_is_private_whatever_the_umask(
    tmp_path: Path, stingy_umask: None
) -> None:
    assert make_private_dirs(tmp_path / "attempt_1") == tmp_path / "attempt_1"
    assert _mode(tmp_path / "attempt_1") == 0o700


def test_every_missing_parent_is_private_whatever_the_umask(
    tmp_path: Path, stingy_umask: None
) -> None:
    make_private_dirs(tmp_path / "a" / "b" / "c")
    for folder in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert _mode(folder) == 0o700


def test_a_folder_already_there_keeps_its_mode(tmp_path: Path) -> None:
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o755)
    assert make_private_dirs(tmp_path / "open").is_dir()
    assert _mode(tmp_path / "open") == 0o755


def test_a_path_through_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(NotADirectoryError):
        make_private_dirs(tmp_path / "file" / "sub")
    with pytest.raises(FileExistsError):
        make_private_dirs(tmp_path / "file")


def test_new_private_dir_makes_a_private_folder_whatever_the_umask(
    tmp_path: Path, stingy_umask: None
) -> None:
    assert new_private_dir(tmp_path / "run_01") is True
    assert _mode(tmp_path / "run_01") == 0o700


def test_new_private_dir_leaves_a_folder_already_there_and_a_missing_parent(
    tmp_path: Path,
) -> None:
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o755)
    assert new_private_dir(tmp_path / "open") is False
    assert _mode(tmp_path / "open") == 0o755
    assert new_private_dir(tmp_path / "missing" / "run_01") is False
    assert not (tmp_path / "missing").exists()
    (tmp_path / "file").write_text("x", encoding="utf-8")
    assert new_private_dir(tmp_path / "file") is False  # make_private_dirs says why
    with pytest.raises(NotADirectoryError):
        new_private_dir(tmp_path / "file" / "sub")
