"""Real file system faults for tests: a shell script run in a private mount namespace
(``unshare -m``), where it may bind a folder read-only or mount a small tmpfs without
touching the rest of the machine. Needs root (or user namespaces) and util-linux."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# The backstay command line, as the scripts call it (``backstay ARGS``).
BACKSTAY = f"backstay() {{ {sys.executable} -c 'from backstay.cli import main; main()' \"$@\"; }}"


@functools.cache
def mount_namespaces() -> bool:
    """Whether this machine lets a test mount in a private namespace."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    probe = "mount -t tmpfs -o size=64k tmpfs /mnt && mount -o remount,ro /mnt"
    try:
        done = subprocess.run(
            [unshare, "-m", "sh", "-c", probe], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


needs_mounts = pytest.mark.skipif(
    not mount_namespaces(),
    reason="needs unshare -m and mount (root) for a real read-only / full fs",
)


def in_mount_namespace(script: str, cwd: Path, timeout_s: float = 120.0) -> str:
    """Run ``script`` (sh; ``set -u``; ``backstay ARGS`` runs the CLI) in its own mount
    namespace in ``cwd``; its stdout and stderr together. Its mounts end with it."""
    full = f"set -u\n{BACKSTAY}\n{script}"
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", full],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    return done.stdout + done.stderr
