"""The record of one managed installation: ``<dir>/<name>/backstay-install.json``.

It is written last, atomically, once the installed binary has reported the pinned version:
a folder without it is an unfinished install and is installed again. It names the binary
(relative to the folder) and what the binary looked like when it was checked, so a later
run knows the installation is intact without starting the CLI.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Final

__all__ = ["MANIFEST_FILE", "Manifest", "read_manifest", "write_manifest"]

MANIFEST_FILE: Final = "backstay-install.json"
_FORMAT: Final = 1


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    """What was installed in ``folder``: ``package`` at ``version``, whose program is
    ``folder / binary`` and had ``binary_size`` bytes and ``binary_mtime_ns`` when its
    ``--version`` was checked."""

    folder: Path
    name: str
    package: str
    version: str
    binary: str
    binary_size: int
    binary_mtime_ns: int
    installed_at: str

    @property
    def binary_path(self) -> Path:
        return self.folder / self.binary

    def intact(self) -> bool:
        """Whether the binary is still there, unchanged since it was checked."""
        try:
            stat = self.binary_path.stat()
        except OSError:
            return False
        return stat.st_size == self.binary_size and stat.st_mtime_ns == self.binary_mtime_ns


def _field(data: dict[str, Any], name: str, kind: type) -> Any:
    value = data.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(name)  # noqa: TRY004 - read_manifest turns any ValueError into None
    return value


def read_manifest(folder: Path) -> Manifest | None:
    """The manifest in ``folder``, or ``None`` when it is missing or unreadable."""
    try:
        data = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            return None
        binary = _field(data, "binary", str)
        if Path(binary).is_absolute() or ".." in Path(binary).parts:
            return None
        return Manifest(
            folder=folder,
            name=_field(data, "name", str),
            package=_field(data, "package", str),
            version=_field(data, "version", str),
            binary=binary,
            binary_size=_field(data, "binary_size", int),
            binary_mtime_ns=_field(data, "binary_mtime_ns", int),
            installed_at=_field(data, "installed_at", str),
        )
    except (OSError, ValueError):  # json.JSONDecodeError is a ValueError
        return None


def write_manifest(
    folder: Path, *, name: str, package: str, version: str, binary: Path
) -> Manifest:
    """Record ``binary`` (a path inside ``folder``) as ``package`` at ``version``,
    atomically (a reader sees the old manifest or the new one, never half)."""
    stat = binary.stat()
    manifest = Manifest(
        folder=folder,
        name=name,
        package=package,
        version=version,
        binary=str(binary.relative_to(folder)),
        binary_size=stat.st_size,
        binary_mtime_ns=stat.st_mtime_ns,
        installed_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    )
    data = {"format": _FORMAT} | {
        f.name: getattr(manifest, f.name)
        for f in dataclasses.fields(manifest)
        if f.name != "folder"
    }
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".manifest-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, folder / MANIFEST_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return manifest
