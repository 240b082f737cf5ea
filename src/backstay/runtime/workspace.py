"""``Workspace``: the directory the built-in file tools cannot leave.

Every path is opened relative to a descriptor of the workspace directory, one component
at a time, each with ``O_NOFOLLOW`` (``openat``); directories are created with
``mkdirat`` and then opened the same way. Nothing is resolved by name first and opened
again later, so a directory swapped for a symlink between a check and the open (by a
process running concurrently in the workspace) cannot redirect the open outside.

Refused with ``SecurityViolation`` (``ERR_SANDBOX_ESCAPE``), naming the path: an empty
path, a NUL byte, an absolute path, any ``..`` component, and a symlink anywhere on the
path (also one pointing inside the workspace: a symlink is never followed). Only regular
files are read or written, so a FIFO left in the workspace cannot block the caller.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from backstay.runtime.errors import SecurityViolation

__all__ = ["Workspace"]

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS: Final = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
_READ_FLAGS: Final = os.O_RDONLY | _FILE_FLAGS
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | _FILE_FLAGS
_NEW_DIR_MODE: Final = 0o755
_NEW_FILE_MODE: Final = 0o644
_CHUNK: Final = 64 * 1024


def _escape(message: str) -> SecurityViolation:
    return SecurityViolation(message, code="ERR_SANDBOX_ESCAPE")


def _is_symlink(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


class Workspace:
    """A directory the file tools may not leave (see the module)."""

    __slots__ = ("root",)

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "the workspace is not a directory", root)

    @staticmethod
    def parts(path: str) -> tuple[str, ...]:
        """The components of ``path`` (relative to the workspace; ``.`` and empty ones
        dropped), or ``SecurityViolation`` when it is empty, absolute, holds a NUL byte
        or a ``..``."""
        if not isinstance(path, str) or not path:
            raise _escape("a tool path must be a non-empty string")
        if "\x00" in path:
            raise _escape(f"path {path!r} holds a NUL byte")
        if path.startswith("/"):
            raise _escape(f"path {path!r} is absolute; paths are relative to the workspace")
        parts = tuple(part for part in path.split("/") if part not in ("", "."))
        if ".." in parts:
            raise _escape(f"path {path!r} holds '..'; paths may not climb out of the workspace")
        return parts

    def read_bytes(self, path: str, limit: int) -> bytes:
        """The first ``limit`` bytes of the regular file ``path``."""
        parts = self.parts(path)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "is the workspace itself", path)
        with self._directory(path, parts[:-1], create=False) as dir_fd:
            fd = self._open_file(dir_fd, parts[-1], path, _READ_FLAGS)
        try:
            chunks: list[bytes] = []
            left = limit
            while left > 0 and (chunk := os.read(fd, min(left, _CHUNK))):
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Replace the content of the regular file ``path`` (created, with its missing
        directories, when absent)."""
        parts = self.parts(path)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "is the workspace itself", path)
        with self._directory(path, parts[:-1], create=True) as dir_fd:
            fd = self._open_file(dir_fd, parts[-1], path, _WRITE_FLAGS)
        try:
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def list_names(self, path: str = ".") -> list[str]:
        """The sorted entries of the directory ``path``; directories end with ``/``
        (a symlink never does: it is not followed)."""
        parts = self.parts(path)
        with self._directory(path, parts, create=False) as dir_fd, os.scandir(dir_fd) as it:
            return sorted(e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in it)

    @contextlib.contextmanager
    def _directory(self, path: str, parts: tuple[str, ...], *, create: bool) -> Iterator[int]:
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for name in parts:
                child = self._child_directory(fd, name, path, create=create)
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    @staticmethod
    def _child_directory(dir_fd: int, name: str, path: str, *, create: bool) -> int:
        for _ in range(2):  # a second try after creating it
            try:
                return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
            except FileNotFoundError:
                if not create:
                    raise FileNotFoundError(errno.ENOENT, "no such directory", path) from None
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, _NEW_DIR_MODE, dir_fd=dir_fd)
            except OSError as err:
                if err.errno == errno.ELOOP or _is_symlink(dir_fd, name):
                    raise _escape(f"path {path!r} goes through a symlink ({name!r})") from None
                raise
        raise FileNotFoundError(errno.ENOENT, "a directory vanished while opened", path)

    @staticmethod
    def _open_file(dir_fd: int, name: str, path: str, flags: int) -> int:
        try:
            fd = os.open(name, flags, _NEW_FILE_MODE, dir_fd=dir_fd)
        except OSError as err:
            if err.errno == errno.ELOOP or _is_symlink(dir_fd, name):
                raise _escape(f"path {path!r} is a symlink") from None
            raise
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory", path)
            raise OSError(errno.EINVAL, "not a regular file", path)
        return fd
