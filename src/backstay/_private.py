"""Files and directories only their owner can read: what a state directory is made of.

A state directory holds redacted, but still private, records of the user's work (task
specs, results, transcripts, event logs, reports): its directories are made ``0700`` and
its files ``0600`` (``docs/design/storage.md``), whatever the process's umask allows.
Existing files and directories keep the mode they have.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "make_private_dirs",
    "new_private_dir",
    "open_private",
    "private_new_file",
]

PRIVATE_DIR: Final = 0o700
PRIVATE_FILE: Final = 0o600


def make_private_dirs(path: str | os.PathLike[str]) -> Path:
    """Make ``path`` and each of its missing parents with mode ``0700``; ``path``."""
    target = Path(path)
    try:  # most often only the last folder is missing (an attempt's): one call
        os.mkdir(target, PRIVATE_DIR)
    except (FileNotFoundError, FileExistsError):
        pass  # a parent is missing, or it is there already: as below
    else:
        os.chmod(target, PRIVATE_DIR)  # the umask may have taken bits away; never adds
        return target
    missing: list[Path] = []
    here = target
    while not here.exists() and here != here.parent:
        missing.append(here)
        here = here.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            continue  # made meanwhile by another process: its mode is its maker's
        os.chmod(directory, PRIVATE_DIR)  # the umask may have taken bits away; never adds
    if not target.is_dir():
        target.mkdir(parents=True, exist_ok=True)  # raises the error that says why
    return target


def new_private_dir(path: str | os.PathLike[str]) -> bool:
    """Make the folder ``path`` with mode ``0700`` if its parent is there and it is not:
    whether it was made now (``False``: it is there already, or its parent is missing).
    One ``mkdir`` and one ``chmod`` where ``make_private_dirs`` would first look around:
    a caller that learns the folder is new knows nothing is in it yet."""
    try:
        os.mkdir(path, PRIVATE_DIR)
    except (FileNotFoundError, FileExistsError):
        return False
    os.chmod(path, PRIVATE_DIR)  # the umask may have taken bits away; never adds
    return True


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """``os.open(path, flags | O_CLOEXEC, 0o600)``: a file made now is private."""
    return os.open(path, flags | os.O_CLOEXEC, PRIVATE_FILE)


def private_new_file(path: str | os.PathLike[str], existed: bool) -> None:
    """Make ``path`` private if it did not exist before (``existed``) and does now (a file
    a library such as SQLite just created with its own mode)."""
    if existed:
        return
    try:
        os.chmod(path, PRIVATE_FILE)
    except FileNotFoundError:
        return
