"""Shared helpers of the observability tests: a finished batch in a state directory, and
circuit changes written to its log."""

from __future__ import annotations

import datetime as _dt
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from tests.cli.support import four_outcome_batch

from backstay.engine.circuit_log import CircuitChange, CircuitEntry
from backstay.store.sqlite.circuit_log import SQLiteCircuitLog

BACKSTAY: Final = [sys.executable, "-c", "from backstay.cli import main; main()"]
# A bound on any backstay process a test starts: it is killed after this.
LIMIT_S: Final = 60.0


def finished_batch(tmp_path: Path) -> Path:
    """The state directory of a four-outcome batch: one task succeeded, one failed
    (context overflow), one failed with an escalation (content policy), one paused (quota)."""
    result, state = four_outcome_batch(tmp_path)
    assert result.exit_code == 4, result.output
    return state


def log_circuit(state: Path, breaker: str, *changes: CircuitChange) -> None:
    """Write ``changes`` of ``breaker`` to the circuit log of ``state``, in order."""
    at = _dt.datetime.now(_dt.UTC)
    with SQLiteCircuitLog(state) as log:
        for change in changes:
            wait = 1.5 if change is CircuitChange.WAITED else None
            log.add(CircuitEntry(breaker=breaker, change=change, at=at, wait_s=wait))


def serving(args: list[str]) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A backstay process started with ``args``, and the URL it says it serves on."""
    proc = subprocess.Popen([*BACKSTAY, *args], stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(LIMIT_S, proc.kill)
    watchdog.start()
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            found = re.search(r"(http://127\.0\.0\.1:\d+)/metrics", line)
            if found:
                yield proc, found.group(1)
                return
        pytest.fail(f"backstay {args} never said where it serves")
    finally:
        watchdog.cancel()
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()
