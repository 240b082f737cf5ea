"""The end of a ``backstay`` process: what lived until then is left to the operating system.

When a Python process ends, the interpreter collects its garbage before it destroys its
modules, and again while it does: each collection scans every object still alive. After a
run of ``anthropic-api`` that is the SDK's hundreds of thousands of objects and 0.6–0.9 s
of CPU, more than the run spends on anything but the SDK's import (``import anthropic``
alone spends about 0.4 s of its 1.5 s so). The entry point registers ``end`` before its
command runs, so that it runs after the exit handlers registered later: it collects the
two younger generations (what the command made last: a cycle it dropped is finalised as
before) and freezes the rest, which the interpreter's last collections then skip.

Objects are still destroyed with their modules (files closed, buffers flushed, as by
reference counting before); what is skipped is the finalisers of older cycles still alive
when the process ends, which Python does not promise to call at exit anyway. Memory goes
back to the operating system with the process, as before.
"""

from __future__ import annotations

import atexit
import gc

__all__ = ["end", "register"]

_registered: list[bool] = []


def end() -> None:
    """Collect the younger generations, then freeze what is alive (the process ends)."""
    gc.collect(1)
    gc.freeze()


def register() -> None:
    """Have ``end`` run when the process ends (once per process)."""
    if not _registered:
        _registered.append(True)
        atexit.register(end)
