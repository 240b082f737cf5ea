"""Lease owners: who holds a lease, and whether that holder is certainly gone.

``default_owner()`` names a guard ``"host:pid:token"``. A lease whose owner names this
host and a process id that no longer exists belongs to a runner that died (``kill -9``,
a crash, a power cut of its container): nobody will renew it, and waiting for it to
expire only delays the work. ``holder_is_dead`` says so only when it is certain — an
owner of another host, a name of another form, or a process that exists (even one this
user may not signal) counts as alive, so the lease is then left to expire as usual.
"""

from __future__ import annotations

import os
import secrets
import socket

__all__ = ["default_owner", "holder_is_dead"]


def default_owner() -> str:
    """``"host:pid:random"``: unique to one guard, readable in ``Busy.held_by``."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def holder_is_dead(owner: str) -> bool:
    """Whether ``owner`` (a ``default_owner()`` name) is a process of this host that no
    longer exists."""
    head, _, _token = owner.rpartition(":")
    host, sep, pid_text = head.rpartition(":")
    if not sep or host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists (PermissionError) or cannot be asked: not certainly gone
        return False
    return False
