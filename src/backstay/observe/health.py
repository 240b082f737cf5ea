"""``health_check``: whether a batch's state directory is ready, in the shape of the IETF
draft *Health Check Response Format for HTTP APIs* (``application/health+json``).

Three checks, each ``pass``, ``warn`` or ``fail``:

* ``store:writable``: the state directory, ``state.sqlite`` and its ``-wal`` and ``-shm``
  files can be written (not on a read-only file system, write permission, space left on
  the device) and ``state.sqlite`` takes a write transaction (``fail`` if not). The
  transaction alone is not enough: SQLite grants one in WAL mode without writing;
* ``circuits:open``: one entry per circuit that is open or half-open (``warn``);
* ``escalations:open``: failures waiting for a human (``warn`` when any).

The overall status is the worst of them. ``fail`` is served with HTTP 503, ``pass`` and
``warn`` with 200.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from backstay._version import __version__
from backstay.engine.records import EscalationStatus
from backstay.observe.prometheus import circuit_states
from backstay.observe.snapshot import StateSnapshot, read_state
from backstay.store.sqlite.tasks import STATE_FILE

__all__ = [
    "HEALTH_CONTENT_TYPE",
    "HealthReport",
    "check_writable",
    "file_system_fault",
    "health_check",
    "health_of",
    "liveness",
]

HEALTH_CONTENT_TYPE: Final = "application/health+json"
PASS: Final = "pass"  # noqa: S105 - a health status, not a password
WARN: Final = "warn"
FAIL: Final = "fail"
_RANK: Final = {PASS: 0, WARN: 1, FAIL: 2}
# How long the write check waits for a batch's own write to finish.
_WRITE_TIMEOUT_S: Final = 2.0
_CIRCUIT_NAMES: Final = {1.0: "half-open", 2.0: "open"}
# SQLite's companions of a WAL-mode file, written by every transaction.
_SIDE_FILES: Final = ("-wal", "-shm")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HealthReport:
    """``status`` (pass, warn, fail) and the ``checks`` it came from."""

    status: str
    checks: Mapping[str, tuple[Mapping[str, Any], ...]]
    description: str = "backstay batch"

    @property
    def http_status(self) -> int:
        return 503 if self.status == FAIL else 200

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "version": __version__,
            "description": self.description,
            "checks": {name: [dict(c) for c in found] for name, found in self.checks.items()},
        }


def file_system_fault(state_dir: Path) -> str | None:
    """Why the file system would refuse writes to ``state_dir``'s store (read-only, no
    space left, no permission), or ``None``."""
    path = state_dir / STATE_FILE
    try:
        found = os.statvfs(state_dir)
    except OSError as exc:
        return f"cannot look at {state_dir}: {exc.strerror or exc}"
    if found.f_flag & os.ST_RDONLY:
        return f"{state_dir} is on a read-only file system"
    if found.f_bavail == 0:
        return f"no space left on the device of {state_dir}"
    files = [state_dir, path] + [
        Path(f"{path}{suffix}") for suffix in _SIDE_FILES if Path(f"{path}{suffix}").exists()
    ]
    for file in files:
        if not os.access(file, os.W_OK):
            return f"{file} is not writable (permission denied)"
    return None


def check_writable(state_dir: Path) -> dict[str, Any]:
    """``store:writable``: ``pass`` when ``state_dir``'s store can take writes."""
    path = state_dir / STATE_FILE
    fault = file_system_fault(state_dir)
    if fault is not None:
        return {"status": FAIL, "output": f"{path} takes no write: {fault}"}
    try:
        conn = sqlite3.connect(path, timeout=_WRITE_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        return {"status": FAIL, "output": f"cannot open {path}: {exc}"}
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
    except sqlite3.Error as exc:
        return {"status": FAIL, "output": f"{path} takes no write: {exc}"}
    finally:
        conn.close()
    return {"status": PASS, "componentId": str(path)}


def health_of(snap: StateSnapshot, *, store: Mapping[str, Any] | None = None) -> HealthReport:
    """The report of ``snap`` (``store``: the result of the write check, if made)."""
    at = snap.taken_at.isoformat()
    checks: dict[str, tuple[Mapping[str, Any], ...]] = {}
    if store is not None:
        checks["store:writable"] = ({**store, "time": at},)
    circuits = [
        {
            "componentId": name,
            "status": WARN,
            "observedValue": _CIRCUIT_NAMES[value],
            "time": at,
        }
        for name, value in sorted(circuit_states(snap.circuits).items())
        if value in _CIRCUIT_NAMES
    ]
    checks["circuits:open"] = tuple(circuits) or (
        {"status": PASS, "observedValue": 0, "observedUnit": "circuits", "time": at},
    )
    waiting = sum(1 for e in snap.escalations if e.status is EscalationStatus.OPEN)
    checks["escalations:open"] = (
        {
            "status": WARN if waiting else PASS,
            "observedValue": waiting,
            "observedUnit": "escalations",
            "time": at,
        },
    )
    worst = max((c["status"] for found in checks.values() for c in found), key=_RANK.__getitem__)
    return HealthReport(status=worst, checks=checks)


def health_check(state_dir: str | os.PathLike[str]) -> HealthReport:
    """The readiness of the batch in ``state_dir``: its store takes writes, and which
    circuits are open and how many escalations wait. ``ConfigError`` when ``state_dir``
    holds no batch."""
    snap = read_state(state_dir)
    return health_of(snap, store=check_writable(Path(state_dir)))


def liveness() -> HealthReport:
    """The process serves: ``pass``, no checks."""
    return HealthReport(status=PASS, checks={})
