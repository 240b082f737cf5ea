"""Running installers and ``--version`` probes: own process group, closed stdin, a deadline
after which the whole group is killed, output to a file or kept (bounded) in memory.

Installers run in threads (several CLIs at once); a ``KeyboardInterrupt`` in the caller
must not leave npm or pip running, so every live group is noted and ``kill_all`` ends them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, TextIO

from backstay.redact import redact

__all__ = ["Finished", "kill_all", "run"]

# What a failure message quotes of a command's output.
TAIL_CHARS: Final = 2000
_KILL_GRACE_S: Final = 2.0

_live: set[int] = set()
_live_lock = threading.Lock()


@dataclasses.dataclass(frozen=True, slots=True)
class Finished:
    """How a command ended: its exit code (``None`` when it was killed at the deadline)
    and the end of its combined output."""

    returncode: int | None
    tail: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def _kill_group(pgid: int, proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(_KILL_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    proc.wait()


def _tail_of(log: Path | None, text: str) -> str:
    if log is None:
        return text[-TAIL_CHARS:]
    with log.open("rb") as handle:
        handle.seek(max(0, log.stat().st_size - TAIL_CHARS))
        return handle.read().decode("utf-8", "replace")


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout_s: float,
    cwd: Path | None = None,
    log: Path | None = None,
    stop: threading.Event | None = None,
) -> Finished:
    """Run ``argv`` to its end or its deadline. With ``log``, stdout and stderr are
    appended to that file (a header line names the command) and redacted once it ends;
    otherwise they are kept in
    memory (for short outputs such as ``--version``). ``OSError`` when it cannot start.

    A command started after ``stop`` was set is killed at once: with ``kill_all`` (called
    after setting it) no command of an interrupted caller survives."""
    handle: TextIO | None = None
    if log is not None:
        handle = log.open("a", encoding="utf-8")
        handle.write(f"$ {subprocess.list2cmdline(list(argv))}\n")
        handle.flush()
    try:
        proc = subprocess.Popen(  # noqa: S603 - argv comes from the catalogue, no shell
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=handle if handle is not None else subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        with _live_lock:
            _live.add(proc.pid)
        try:
            if stop is not None and stop.is_set():
                _kill_group(proc.pid, proc)
            try:
                out, _ = proc.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid, proc)
                try:
                    out, _ = proc.communicate(timeout=_KILL_GRACE_S)
                except subprocess.TimeoutExpired:  # a process that left the group holds it
                    out = ""
                return Finished(None, _tail_of(log, out or ""))
            except BaseException:
                _kill_group(proc.pid, proc)
                raise
            # Whatever the command left running in its group goes with it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        finally:
            with _live_lock:
                _live.discard(proc.pid)
    finally:
        if handle is not None:
            handle.close()
            _redact_file(log)
    return Finished(proc.returncode, _tail_of(log, out or ""))


def _redact_file(log: Path | None) -> None:
    """Installers' output is written by them straight to the log; whatever secret it
    holds (a registry token in an error) is redacted once they are done."""
    if log is None:
        return
    text = log.read_text(encoding="utf-8", errors="replace")
    cleaned = redact(text)
    if cleaned != text:
        log.write_text(cleaned, encoding="utf-8")


def kill_all() -> None:
    """Kill the process group of every command still running (an interrupted install)."""
    with _live_lock:
        groups = list(_live)
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
