"""``WorkspaceSnapshot``: an agent's workspace as it was before the task's first attempt,
kept so that a later attempt never starts in a workspace a failed one half edited.

``WorkspaceSnapshot.take(workspace, into)`` copies every file, folder and symbolic link
under ``workspace`` into the folder ``into``: regular files with their bytes, mode and
modification time, folders with their mode, symbolic links as links (their target text;
never followed). Other kinds (sockets, fifos, devices) are left out. The copy is made in
``into``'s sibling ``<name>.partial`` and renamed into place when complete, so a copy cut
short by a crash never passes for a snapshot. ``into`` is private: folders 0700, files
0600 (the workspace's own modes are kept in ``manifest.json``, not on the copies).

``restore()`` puts the workspace back exactly: whatever is not in the snapshot is
removed (files the attempt added, folders, links), whatever differs (content, mode, kind,
link target) is put back, whatever was deleted is written again. Files whose size and
content are unchanged are not rewritten.

Bounded: a workspace with more than ``max_bytes`` of file content or more than
``max_entries`` entries is not copied (``WorkspaceSnapshotError`` naming the workspace,
what it holds and the limit; nothing is left in ``into``). ``exclude`` names folders
inside the workspace that are neither copied nor touched by a restore (a state folder
kept inside the workspace); a folder that holds the workspace excludes nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

from backstay.errors import WorkspaceSnapshotError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ENTRIES",
    "MANIFEST_NAME",
    "SnapshotEntry",
    "WorkspaceSnapshot",
]

# The most file content a snapshot copies (1 GiB) and the most entries it lists.
DEFAULT_MAX_BYTES: Final = 1 << 30
DEFAULT_MAX_ENTRIES: Final = 200_000
MANIFEST_NAME: Final = "manifest.json"
_FILES: Final = "files"
_PARTIAL: Final = ".partial"
_FILE, _DIR, _LINK = "file", "dir", "link"
_CHUNK: Final = 1 << 16


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotEntry:
    """One entry of a snapshot: its path relative to the workspace (``/``-separated), its
    kind (``file``, ``dir``, ``link``), its permission bits, and a file's size and
    modification time or a link's target."""

    path: str
    kind: str
    mode: int = 0
    size: int = 0
    mtime_ns: int = 0
    target: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class WorkspaceSnapshot:
    """A snapshot kept in ``folder`` of the workspace ``workspace``."""

    workspace: Path
    folder: Path
    entries: tuple[SnapshotEntry, ...]
    exclude: tuple[Path, ...] = ()

    @property
    def size_bytes(self) -> int:
        """The file content the snapshot holds."""
        return sum(e.size for e in self.entries if e.kind == _FILE)

    @classmethod
    def take(
        cls,
        workspace: Path,
        into: Path,
        *,
        exclude: Iterable[Path] = (),
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> WorkspaceSnapshot:
        """Copy ``workspace`` into the new folder ``into`` (see the module docstring)."""
        skip = _resolved(exclude, into, workspace)
        entries = _listing(workspace, skip, max_bytes=max_bytes, max_entries=max_entries)
        partial = into.with_name(into.name + _PARTIAL)
        shutil.rmtree(partial, ignore_errors=True)
        try:
            _copy(workspace, partial, entries)
            into.parent.mkdir(parents=True, exist_ok=True)
            partial.rename(into)
        except OSError as err:
            shutil.rmtree(partial, ignore_errors=True)
            raise WorkspaceSnapshotError(
                f"workspace {workspace} could not be copied to {into}: {err}"
            ) from err
        return cls(workspace, into, entries, tuple(skip))

    @classmethod
    def load(
        cls, workspace: Path, folder: Path, *, exclude: Iterable[Path] = ()
    ) -> WorkspaceSnapshot | None:
        """The snapshot kept in ``folder``; ``None`` when there is none (or it is damaged)."""
        try:
            data = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
            entries = tuple(SnapshotEntry(**item) for item in data["entries"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return cls(workspace, folder, entries, tuple(_resolved(exclude, folder, workspace)))

    def restore(self) -> None:
        """Put the workspace back exactly as the snapshot has it."""
        wanted = {e.path: e for e in self.entries}
        self.workspace.mkdir(parents=True, exist_ok=True)
        try:
            self._remove_extra(wanted)
            for entry in self.entries:
                self._put_back(entry)
            for entry in reversed(self.entries):  # folder modes last: a read-only one
                if entry.kind == _DIR:  # must not stop its files being written
                    os.chmod(self.workspace / entry.path, entry.mode)
        except OSError as err:
            raise WorkspaceSnapshotError(
                f"workspace {self.workspace} could not be restored from {self.folder}: {err}"
            ) from err

    def remove(self) -> None:
        """Delete the snapshot's folder."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def _remove_extra(self, wanted: dict[str, SnapshotEntry]) -> None:
        for folder, dirs, files in os.walk(self.workspace, topdown=False):
            base = Path(folder)
            if _inside(base, self.exclude):
                continue
            for name in [*files, *dirs]:
                path = base / name
                if _inside(path, self.exclude) or any(_inside(x, (path,)) for x in self.exclude):
                    continue
                entry = wanted.get(path.relative_to(self.workspace).as_posix())
                if entry is None or entry.kind != _kind(path.lstat().st_mode):
                    _delete(path)

    def _put_back(self, entry: SnapshotEntry) -> None:
        path = self.workspace / entry.path
        if entry.kind == _DIR:
            if not path.is_dir() or path.is_symlink():
                path.mkdir(mode=0o700)
            os.chmod(path, entry.mode | stat.S_IWUSR | stat.S_IXUSR)
        elif entry.kind == _LINK:
            if path.is_symlink() and os.readlink(path) == entry.target:
                return
            if path.is_symlink() or path.exists():
                _delete(path)
            os.symlink(entry.target, path)
        else:
            kept = self.folder / _FILES / entry.path
            if not (path.is_file() and not path.is_symlink() and _same(path, kept, entry)):
                if path.is_symlink() or path.exists():
                    _delete(path)
                shutil.copyfile(kept, path)
            os.chmod(path, entry.mode)
            os.utime(path, ns=(entry.mtime_ns, entry.mtime_ns))


def _resolved(exclude: Iterable[Path], into: Path, workspace: Path) -> list[Path]:
    """The folders to leave out that lie inside ``workspace`` (a folder holding the
    workspace, such as a suite run's state folder, leaves nothing out)."""
    root = Path(os.path.realpath(workspace))
    folders = (*exclude, into, into.with_name(into.name + _PARTIAL))
    real = (Path(os.path.realpath(p)) for p in folders)
    return [p for p in real if root in p.parents]


def _inside(path: Path, folders: Iterable[Path]) -> bool:
    real = Path(os.path.realpath(path))
    return any(real == f or f in real.parents for f in folders)


def _kind(mode: int) -> str | None:
    if stat.S_ISLNK(mode):
        return _LINK
    if stat.S_ISDIR(mode):
        return _DIR
    if stat.S_ISREG(mode):
        return _FILE
    return None


def _walk(workspace: Path, skip: list[Path]) -> Iterator[Path]:
    for folder, dirs, files in os.walk(workspace):
        base = Path(folder)
        dirs[:] = sorted(d for d in dirs if not _inside(base / d, skip))
        for name in [*dirs, *sorted(files)]:
            yield base / name


def _listing(
    workspace: Path, skip: list[Path], *, max_bytes: int, max_entries: int
) -> tuple[SnapshotEntry, ...]:
    if not workspace.is_dir():
        raise WorkspaceSnapshotError(f"workspace {workspace} is not a folder")
    entries: list[SnapshotEntry] = []
    total = 0
    try:
        for path in _walk(workspace, skip):
            info = path.lstat()
            kind = _kind(info.st_mode)
            if kind is None:
                continue
            relative = path.relative_to(workspace).as_posix()
            mode = stat.S_IMODE(info.st_mode)
            if kind == _FILE:
                total += info.st_size
                entry = SnapshotEntry(
                    path=relative,
                    kind=kind,
                    mode=mode,
                    size=info.st_size,
                    mtime_ns=info.st_mtime_ns,
                )
            elif kind == _LINK:
                entry = SnapshotEntry(path=relative, kind=kind, target=os.readlink(path))
            else:
                entry = SnapshotEntry(path=relative, kind=kind, mode=mode)
            entries.append(entry)
            if total > max_bytes or len(entries) > max_entries:
                raise WorkspaceSnapshotError(
                    f"workspace {workspace} holds more than the snapshot limit "
                    f"({max_bytes} bytes, {max_entries} entries): not snapshotted "
                    "(raise config.snapshot_max_bytes, or set config.workspace_snapshot: false)"
                )
    except OSError as err:
        raise WorkspaceSnapshotError(f"workspace {workspace} could not be listed: {err}") from err
    return tuple(entries)


def _copy(workspace: Path, into: Path, entries: tuple[SnapshotEntry, ...]) -> None:
    files = into / _FILES
    files.mkdir(mode=0o700, parents=True)
    os.chmod(into, 0o700)
    for entry in entries:
        if entry.kind == _DIR:
            (files / entry.path).mkdir(mode=0o700)
        elif entry.kind == _FILE:
            kept = files / entry.path
            shutil.copyfile(workspace / entry.path, kept)
            os.chmod(kept, 0o600)
    manifest = into / MANIFEST_NAME
    fd = os.open(manifest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"entries": [dataclasses.asdict(e) for e in entries]}, out)
        out.flush()
        os.fsync(out.fileno())


def _same(path: Path, kept: Path, entry: SnapshotEntry) -> bool:
    if path.stat().st_size != entry.size:
        return False
    with path.open("rb") as one, kept.open("rb") as other:
        while True:
            a, b = one.read(_CHUNK), other.read(_CHUNK)
            if a != b:
                return False
            if not a:
                return True


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        for folder, dirs, _ in os.walk(path):  # a read-only folder would refuse its removal
            for name in dirs:
                sub = Path(folder) / name
                if not sub.is_symlink():
                    os.chmod(sub, stat.S_IRWXU)
        os.chmod(path, stat.S_IRWXU)
        shutil.rmtree(path)
    else:
        path.unlink()
