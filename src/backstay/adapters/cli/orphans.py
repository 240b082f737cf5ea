"""Finding and stopping the agent processes a dead runner left behind.

Every process ``run_process`` starts carries ``ATTEMPT_TAG`` in its environment: the
absolute path of the attempt's output directory, unique to one attempt of one state
directory, and inherited by everything the agent spawns. An agent runs in its own
process group so that a deadline can kill all of it; the price is that a runner killed
with ``kill -9`` leaves that group running (nothing signals it). When the engine later
takes such an attempt over — it holds the operation's lease, so by the lease protocol no
live runner owns the attempt — ``stop_tagged`` finds the processes whose environment
carries the attempt's tag and kills them, before the attempt is recorded interrupted.
``run_process`` itself calls ``kill_tagged`` when an attempt ends, for what left the
agent's process group (``setsid``, a daemonising tool) while its runner was alive.
A process that also cleared its environment carries no tag and is not found.

Linux only (``/proc``): elsewhere nothing is found. Processes of other users whose
environment cannot be read are not touched.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Final

__all__ = ["ATTEMPT_TAG", "attempt_tag", "kill_tagged", "stop_tagged", "tagged_processes"]

ATTEMPT_TAG: Final = "BACKSTAY_ATTEMPT_DIR"
_PROC: Final = Path("/proc")
# How long stop_tagged waits for the killed processes to be gone.
_GONE_WAIT_S: Final = 2.0
_GONE_POLL_S: Final = 0.02


def attempt_tag(output_dir: Path | str) -> str:
    """The tag value of the attempt writing to ``output_dir``: its absolute path."""
    return str(Path(output_dir).absolute())


def tagged_processes(tag: str, *, proc_root: Path = _PROC) -> list[int]:
    """The pids of live processes (not this one) whose environment has ``tag``."""
    needle = f"{ATTEMPT_TAG}={tag}".encode()
    own = os.getpid()
    found = []
    try:
        entries = list(proc_root.iterdir())
    except OSError:  # no /proc: nothing can be found
        return []
    for entry in entries:
        if not entry.name.isdigit() or int(entry.name) == own:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return sorted(found)


def kill_tagged(tag: str) -> list[int]:
    """SIGKILL every process carrying ``tag`` (and its process group, unless that is this
    process's own); the pids killed. Does not wait."""
    pids = tagged_processes(tag)
    own_group = os.getpgrp()
    for pid in pids:
        with contextlib.suppress(OSError):
            group = os.getpgid(pid)
            if group != own_group:
                os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return pids


def stop_tagged(tag: str) -> list[int]:
    """SIGKILL every process carrying ``tag`` (and its process group); the pids killed.
    Waits up to a moment for them to be gone."""
    pids = kill_tagged(tag)
    deadline = time.monotonic() + _GONE_WAIT_S
    while pids and time.monotonic() < deadline and tagged_processes(tag):
        time.sleep(_GONE_POLL_S)
    return pids
