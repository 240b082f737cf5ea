"""Shared helpers of the adapter tests: real processes, and ways to see that they are gone."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import MappingProxyType
from typing import Final

import pytest

# A key-shaped canary (Anthropic's format) that redaction must remove wherever it appears.
CANARY_KEY: Final = "sk-ant-api03-CanaryCanaryCanary0123456789"
# A secret with no recognisable shape: only known because it is in the child's environment.
CANARY_ENV_VALUE: Final = "plain-canary-value-7f3a9c1e"


def python(code: str) -> list[str]:
    """A command line running ``code`` in this interpreter, isolated from the environment."""
    return [sys.executable, "-I", "-c", code]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs. A zombie counts as dead: it was killed and only waits to be
    reaped (an orphan's new parent may never reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def gone_within(pid: int, seconds: float = 3.0) -> bool:
    """Whether ``pid`` is dead, or dies within ``seconds``."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def descendants(pid: int) -> list[int]:
    """The pids of every process below ``pid`` now (children, their children, ...), read
    from ``/proc``."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [child for child, ppid in parents.items() if ppid == parent]
        found += kids
        frontier += kids
    return found


def spawned_pids(stdout_log: Path) -> list[int]:
    """The pids a child announced with a ``spawned <pid>`` line."""
    return [
        int(line.split()[1])
        for line in stdout_log.read_text().splitlines()
        if line.startswith("spawned ")
    ]


def rss_kib() -> int:
    """This process's resident set size, from /proc/self/status."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


# An adapter name reserved for the future, for the tests of how one is reported.
PLANNED_NAME: Final = "future-agent"
PLANNED_WHAT: Final = "a future agent (npm future-agent)"


def plan_an_adapter(monkeypatch: pytest.MonkeyPatch) -> str:
    """Reserve ``PLANNED_NAME`` as a planned adapter for this test; its name."""
    from backstay.adapters import registry  # noqa: PLC0415 - the module patched
    from backstay.config.suite import adapters as _suite_adapters  # noqa: PLC0415

    planned = MappingProxyType({**registry.PLANNED_ADAPTERS, PLANNED_NAME: PLANNED_WHAT})
    monkeypatch.setattr(registry, "PLANNED_ADAPTERS", planned)
    monkeypatch.setattr(_suite_adapters, "PLANNED_ADAPTERS", planned)
    return PLANNED_NAME
