"""The sandbox of the shell tool, and the workspace of the file tools (``Workspace``).

``sandbox_kind()`` says what can isolate a command here, probed once:

* ``"bubblewrap"`` — the only sandbox that *holds* (``sandbox_holds()``). ``shell_prefix``
  runs the command with ``bwrap``: every namespace unshared (pid, net, ipc, uts, cgroup
  and user where the kernel allows), all capabilities dropped, ``--die-with-parent``,
  ``--new-session``, ``--clearenv`` (only ``PATH``, ``LANG`` and ``HOME=/tmp`` set); a
  filesystem built from nothing: read-only binds of ``/usr`` and the system directories
  a shell needs (``/bin``, ``/sbin``, ``/lib*`` as on the host), a few files of ``/etc``
  (``_ETC_ENTRIES``), its own ``/proc`` and ``/dev``, an empty ``/tmp``, and the
  workspace, the only writable directory. The state dir, other workspaces, the host's
  processes and Unix sockets are not in it. When the sandbox's first process exits, the
  kernel ends every process left in its PID namespace.
* ``"unshare"`` / ``"unshare-user"`` — ``unshare --net`` (as root, or in a user
  namespace): isolates the network only, so it does not hold; the shell tool runs under
  it only when the user opted in (``allow_weak_sandbox``).
* ``None`` — nothing works here.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

from backstay.runtime.workspace import Workspace

__all__ = ["SHELL_HOME", "Workspace", "sandbox_holds", "sandbox_kind", "shell_prefix"]

_PROBE_TIMEOUT_S: Final = 5.0
SHELL_HOME: Final = "/tmp"  # noqa: S108 - the sandbox's own empty tmpfs
_SHELL_PATH: Final = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
_SYSTEM_DIRS: Final = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_ENTRIES: Final = (
    "alternatives",
    "bash.bashrc",
    "group",
    "hosts",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "passwd",
    "profile",
)
# Every namespace; --unshare-all tries the user namespace only, asked for first, with
# --disable-userns (no nested user namespace), where this bubblewrap and kernel allow it.
_ISOLATION: Final = ("--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--new-session")
_USERNS: Final = ("--unshare-user", "--disable-userns")


def _system_binds() -> list[str]:
    args: list[str] = []
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):  # /bin -> usr/bin on a merged /usr
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in _ETC_ENTRIES:
        path = f"/etc/{name}"
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def _environment() -> list[str]:
    return [
        "--clearenv",
        "--setenv", "PATH", _SHELL_PATH,
        "--setenv", "LANG", "C.UTF-8",
        "--setenv", "HOME", SHELL_HOME,
    ]  # fmt: skip


def _works(prefix: list[str]) -> bool:
    try:
        done = subprocess.run(  # noqa: S603 - fixed arguments
            [*prefix, "/bin/sh", "-c", "exit 0"],
            capture_output=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
            env={"PATH": _SHELL_PATH},
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@functools.cache
def _bubblewrap() -> tuple[str, ...] | None:
    """bwrap and the isolation flags it accepts here, or ``None``."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    for flags in ((*_ISOLATION, *_USERNS), _ISOLATION):
        probe = [bwrap, *flags, *_environment(), *_system_binds(), "--proc", "/proc",
                 "--dev", "/dev", "--tmpfs", SHELL_HOME, "--"]  # fmt: skip
        if _works(probe):
            return (bwrap, *flags)
    return None


@functools.cache
def sandbox_kind() -> str | None:
    """``"bubblewrap"``, ``"unshare"``, ``"unshare-user"`` or ``None`` (see the module)."""
    if _bubblewrap() is not None:
        return "bubblewrap"
    unshare = shutil.which("unshare")
    if unshare and _works([unshare, "--net", "--"]):
        return "unshare"
    if unshare and _works([unshare, "--user", "--map-root-user", "--net", "--"]):
        return "unshare-user"
    return None


def sandbox_holds() -> bool:
    """Whether the shell tool's sandbox here isolates more than the network (bubblewrap)."""
    return sandbox_kind() == "bubblewrap"


def shell_prefix(workspace: Path) -> list[str] | None:
    """The prefix that runs a command in the sandbox of ``sandbox_kind()`` with the
    workspace as its working directory (see the module); ``None`` when there is none."""
    bwrap = _bubblewrap()
    if bwrap is not None:
        ws = str(workspace)
        return [
            *bwrap,
            *_environment(),
            *_system_binds(),
            "--proc", "/proc",
            "--dev", "/dev",
            "--tmpfs", SHELL_HOME,
            "--bind", ws, ws,
            "--chdir", ws,
            "--",
        ]  # fmt: skip
    unshare = shutil.which("unshare") or "unshare"
    kind = sandbox_kind()
    if kind == "unshare":
        return [unshare, "--net", "--"]
    if kind == "unshare-user":
        return [unshare, "--user", "--map-root-user", "--net", "--"]
    return None
