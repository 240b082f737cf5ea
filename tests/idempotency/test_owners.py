"""Lease owners: a holder counts as dead only when it certainly is."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from backstay.idempotency.owners import default_owner, holder_is_dead

HOST = socket.gethostname()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=10)
    return proc.pid


def test_a_process_of_this_host_that_exited_is_dead() -> None:
    assert holder_is_dead(f"{HOST}:{_dead_pid()}:abcd1234")


def test_a_live_process_is_not_dead() -> None:
    assert not holder_is_dead(f"{HOST}:{os.getppid()}:abcd1234")


def test_this_process_is_never_dead_to_itself() -> None:
    assert not holder_is_dead(default_owner())


def test_a_holder_on_another_host_is_never_judged() -> None:
    assert not holder_is_dead(f"another-{HOST}:{_dead_pid()}:abcd1234")


def test_owners_of_another_form_are_never_judged() -> None:
    pid = _dead_pid()
    for owner in ("me", f"{HOST}:{pid}", f"{HOST}:x{pid}:t", f"{HOST}:0:t", ""):
        assert not holder_is_dead(owner), owner
