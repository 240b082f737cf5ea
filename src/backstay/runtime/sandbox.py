"""The sandbox of the built-in tools: paths confined to a workspace, commands without
network.

``Workspace.resolve(path)`` refuses absolute paths outside the workspace, ``..`` that
climbs out of it and symlinks that lead out of it (``SecurityViolation`` with
``ERR_SANDBOX_ESCAPE``). ``shell_prefix()`` is the command prefix that runs a command with
no network: bubblewrap when installed (also a read-only view of the system and only the
workspace writable), else ``unshare --net`` (as root) or ``unshare --user --map-root-user
--net``; ``None`` when none of them works here, and then the shell tool refuses to run.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

from backstay.runtime.errors import SecurityViolation

__all__ = ["Workspace", "sandbox_kind", "shell_prefix"]

_PROBE_TIMEOUT_S: Final = 5.0


class Workspace:
    """A directory the file tools may not leave."""

    __slots__ = ("root",)

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve(strict=True)

    def resolve(self, path: str) -> Path:
        """``path`` (relative to the workspace) resolved, symlinks followed; refused when
        it ends outside the workspace."""
        if not isinstance(path, str) or not path or "\x00" in path:
            raise SecurityViolation(
                "a tool path must be a non-empty string", code="ERR_SANDBOX_ESCAPE"
            )
        candidate = (self.root / path).resolve(strict=False)
        if candidate != self.root and self.root not in candidate.parents:
            raise SecurityViolation(
                f"path {path!r} is outside the workspace", code="ERR_SANDBOX_ESCAPE"
            )
        return candidate


def _works(prefix: list[str]) -> bool:
    try:
        done = subprocess.run(  # noqa: S603 - fixed arguments
            [*prefix, "true"], capture_output=True, timeout=_PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@functools.cache
def sandbox_kind() -> str | None:
    """``"bubblewrap"``, ``"unshare"``, ``"unshare-user"`` or ``None``: what isolates
    commands on this machine (probed once)."""
    bwrap = shutil.which("bwrap")
    if bwrap and _works([bwrap, "--ro-bind", "/", "/", "--unshare-net", "--"]):
        return "bubblewrap"
    unshare = shutil.which("unshare")
    if unshare and _works([unshare, "--net", "--"]):
        return "unshare"
    if unshare and _works([unshare, "--user", "--map-root-user", "--net", "--"]):
        return "unshare-user"
    return None


def shell_prefix(workspace: Path) -> list[str] | None:
    """The prefix that runs a command without network (see the module)."""
    kind = sandbox_kind()
    if kind == "bubblewrap":
        bwrap = shutil.which("bwrap") or "bwrap"
        ws = str(workspace)
        return [
            bwrap,
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--proc", "/proc",
            "--tmpfs", "/tmp",  # noqa: S108 - a private empty /tmp inside the sandbox
            "--bind", ws, ws,
            "--unshare-net",
            "--die-with-parent",
            "--chdir", ws,
            "--",
        ]  # fmt: skip
    if kind == "unshare":
        return ["unshare", "--net", "--"]
    if kind == "unshare-user":
        return ["unshare", "--user", "--map-root-user", "--net", "--"]
    return None
