"""Finding processes an adapter left behind (Linux ``/proc``), for the contract suite.

While a ``ProcessWatch`` is open a thread notes, every ``POLL_S``, each process descending
from this one. Afterwards a process is a *leftover* when it is alive (zombies are dead: they
only wait to be reaped), appeared while the watch was open, and either was seen descending
from this process, belongs to the session or process group of one that was (a grandchild
whose parent was killed is re-parented, but keeps its group), or carries the watch's
marker variable in its environment (inherited from the request's environment).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import Final

__all__ = ["MARKER_VARIABLE", "ProcessInfo", "ProcessWatch", "proc_available"]

MARKER_VARIABLE: Final = "BACKSTAY_CONTRACT_RUN"
POLL_S: Final = 0.02
_PROC: Final = Path("/proc")


def proc_available() -> bool:
    """Whether processes can be inspected here (Linux ``/proc``)."""
    return (_PROC / "self" / "stat").exists()


@dataclasses.dataclass(frozen=True, slots=True)
class ProcessInfo:
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    command: str

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X")


def _read(pid: int) -> ProcessInfo | None:
    base = _PROC / str(pid)
    try:
        stat = (base / "stat").read_text(encoding="utf-8", errors="replace")
        raw = (base / "cmdline").read_bytes()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    command = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    return ProcessInfo(
        pid=pid,
        ppid=int(fields[1]),
        pgid=int(fields[2]),
        sid=int(fields[3]),
        state=fields[0],
        command=command or stat.partition("(")[2].rpartition(")")[0],
    )


def _all() -> dict[int, ProcessInfo]:
    found: dict[int, ProcessInfo] = {}
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            info = _read(int(entry.name))
            if info is not None:
                found[info.pid] = info
    return found


def _carries(pid: int, marker: bytes) -> bool:
    try:
        return marker in (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False


def _descendants(table: dict[int, ProcessInfo], root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for info in table.values():
        children.setdefault(info.ppid, []).append(info.pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


class ProcessWatch:
    """Notes this process's descendants while open; ``leftovers`` lists what survived.

    ``env`` is the marker to add to the request's environment.
    """

    def __init__(self) -> None:
        self.marker = uuid.uuid4().hex
        self._root = os.getpid()
        self._before: frozenset[int] = frozenset()
        self._seen: set[int] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def env(self) -> dict[str, str]:
        return {MARKER_VARIABLE: self.marker}

    def _note(self) -> None:
        self._seen |= _descendants(_all(), self._root) - self._before

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            self._note()

    def __enter__(self) -> ProcessWatch:
        self._before = frozenset(_all())
        self._thread = threading.Thread(target=self._poll, name="backstay-process-watch")
        self._thread.daemon = True
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._note()

    @property
    def seen(self) -> frozenset[int]:
        """The descendants noted while the watch was open."""
        return frozenset(self._seen)

    def _survivors(self) -> list[ProcessInfo]:
        table = _all()
        groups = self._seen | _descendants(table, self._root)
        marker = f"{MARKER_VARIABLE}={self.marker}".encode()
        return [
            info
            for info in table.values()
            if info.alive
            and info.pid not in self._before
            and info.pid != self._root
            and (
                info.pid in groups
                or info.sid in self._seen
                or info.pgid in self._seen
                or _carries(info.pid, marker)
            )
        ]

    def leftovers(self, *, wait_s: float = 3.0) -> list[ProcessInfo]:
        """The processes still alive after up to ``wait_s`` (a kill takes a moment)."""
        deadline = time.monotonic() + wait_s
        while True:
            survivors = self._survivors()
            if not survivors or time.monotonic() >= deadline:
                return survivors
            time.sleep(POLL_S)
