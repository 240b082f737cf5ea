"""``WorkspaceMark``: whether an agent CLI's attempt changed its workspace.

An agent CLI works on files: a failed attempt may have edited, created or deleted some.
Another agent (or model) starting from that half-done state is not the task that was
asked for, so a failure after a changed workspace does **not** move to another candidate
(``docs/fallback.md``: "An agent CLI's partial work"); it is retried on the same
candidate or given up, as the retry policy says. backstay does not reset workspaces.

``WorkspaceMark.take(root)`` lists every file and folder under ``root`` with its size and
modification time (``lstat``, symbolic links not followed) into one digest;
``changed_since(mark)`` compares a new listing with it. Left out: the folders given in
``exclude`` (the attempt's own output folder when it lies inside the workspace) and the
agents' own bookkeeping files (``AGENT_STATE_NAMES``: aider writes its chat history into
the repository on every start). A workspace of more than ``limit`` entries is not listed:
its mark is unknown, and an unknown mark counts as changed (no move).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Final

__all__ = ["AGENT_STATE_NAMES", "DEFAULT_ENTRY_LIMIT", "WorkspaceMark"]

# Names (glob patterns, matched against each file or folder name) agents write for their
# own bookkeeping: not the work.
AGENT_STATE_NAMES: Final = (".aider*",)
# More entries than this and the workspace is not listed (its mark is unknown).
DEFAULT_ENTRY_LIMIT: Final = 50_000


def _skipped(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in AGENT_STATE_NAMES)


@dataclasses.dataclass(frozen=True, slots=True)
class WorkspaceMark:
    """A digest of a workspace's listing; ``None`` when it could not be listed."""

    digest: str | None

    @classmethod
    def take(
        cls, root: Path, *, exclude: Iterable[Path] = (), limit: int = DEFAULT_ENTRY_LIMIT
    ) -> WorkspaceMark:
        """The mark of ``root`` now (an unknown one past ``limit`` entries or on an error)."""
        skip = {os.path.realpath(p) for p in exclude}
        digest = hashlib.blake2b(digest_size=16)
        count = 0
        try:
            for folder, dirs, files in os.walk(root, onerror=_raise):
                dirs[:] = sorted(
                    d
                    for d in dirs
                    if not _skipped(d) and os.path.realpath(os.path.join(folder, d)) not in skip
                )
                for name in [*dirs, *sorted(f for f in files if not _skipped(f))]:
                    count += 1
                    if count > limit:
                        return cls(None)
                    path = os.path.join(folder, name)
                    info = os.lstat(path)
                    relative = os.path.relpath(path, root)
                    digest.update(f"{relative}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
        except OSError:
            return cls(None)
        return cls(digest.hexdigest())

    def changed_since(self, before: WorkspaceMark) -> bool:
        """Whether the workspace changed between ``before`` and this mark (an unknown mark
        on either side counts as changed)."""
        return self.digest is None or before.digest is None or self.digest != before.digest


def _raise(error: OSError) -> None:
    raise error
