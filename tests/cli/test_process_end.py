"""The end of a ``backstay`` process (``cli._process_end``): what the command made last
is collected (a dropped cycle finalised as before), what lived is frozen, so that the
interpreter's last collections skip it; the exit code and output are the command's."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from backstay.cli import _process_end

# A handler registered before the entry point's runs after its own (last in, first out).
SCRIPT = """\
import atexit, gc, sys

class Cycle:
    def __del__(self):
        sys.stdout.write("finalised\\n")

atexit.register(lambda: sys.stdout.write(f"frozen {gc.get_freeze_count() > 0}\\n"))
sys.argv = ["backstay", *sys.argv[1:]]
from backstay.cli import main
try:
    main()
finally:
    cycle = Cycle()
    cycle.me = cycle
    del cycle  # garbage of the last moment, left to the end of the process
"""


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )


def test_end_finalises_young_cycles_and_freezes_the_rest() -> None:
    finalised: list[bool] = []

    class Cycle:
        def __del__(self) -> None:
            finalised.append(True)

    cycle = Cycle()
    cycle.me = cycle  # type: ignore[attr-defined]
    del cycle
    try:
        _process_end.end()
        assert finalised == [True]
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_the_entry_point_ends_its_process_so(tmp_path: Path) -> None:
    done = _run(tmp_path, "--version")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("backstay ")
    assert lines[1:] == ["finalised", "frozen True"]


def test_a_commands_exit_code_and_error_stay_its_own(tmp_path: Path) -> None:
    done = _run(tmp_path, "health", "--json", "--state-dir", "missing")
    assert done.returncode == 2
    assert "no batch ran there" in done.stderr
    assert done.stdout.splitlines() == ["finalised", "frozen True"]
