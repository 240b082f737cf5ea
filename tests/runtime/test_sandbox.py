"""The built-in tools stay in their workspace; the shell tool runs only in a sandbox that
holds (bubblewrap), or under ``unshare --net`` when the user accepted it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, cast

import pytest

from backstay.runtime import SecurityViolation, Tool
from backstay.runtime.builtin_tools import MAX_OUTPUT_BYTES, workspace_tools
from backstay.runtime.sandbox import sandbox_holds, sandbox_kind

ROOT = Path(__file__).resolve().parents[2]
_CHILD_TIMEOUT_S = 60.0

# The shell tool (and the health check) in a process that finds no bubblewrap on its PATH,
# only unshare: what runs on a machine without bubblewrap.
_WEAK_CHILD = """
import asyncio, json, sys
from tests.runtime.support import ScriptedFramework
from backstay.runtime import Runtime, SecurityViolation, health_check
from backstay.runtime.builtin_tools import workspace_tools
from backstay.runtime.sandbox import sandbox_holds, sandbox_kind
tools = workspace_tools(sys.argv[1], allow_weak_sandbox=sys.argv[2] == "weak")
shell = next(t for t in tools if t.name == "shell")
try:
    out = asyncio.run(shell.fn(command=f"nohup sleep {sys.argv[3]} >/dev/null 2>&1 & echo ran"))
except SecurityViolation as err:
    out = {"refused": err.failure.message, "code": err.failure.code}
report = health_check(Runtime(ScriptedFramework({}), tools=tools), exporter_probe=lambda: True)
found = {"kind": sandbox_kind(), "holds": sandbox_holds(), "health": report.to_dict()}
print(json.dumps({**found, **out}))
"""


def _tools(root: Path, *, allow_weak_sandbox: bool = False) -> dict[str, Tool]:
    return {t.name: t for t in workspace_tools(root, allow_weak_sandbox=allow_weak_sandbox)}


def _shell(root: Path, command: str) -> dict[str, Any]:
    shell = cast("Callable[..., Coroutine[Any, Any, dict[str, Any]]]", _tools(root)["shell"].fn)
    return asyncio.run(shell(command=command))


def _pids_running(marker: str) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
    return found


def _left_running(marker: str) -> list[int]:
    """The processes holding ``marker`` still there after 3 s (then killed)."""
    deadline = time.monotonic() + 3.0
    while (left := _pids_running(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left


def _without_bubblewrap(tmp_path: Path, mode: str, marker: str = "300.1") -> dict[str, object]:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "unshare").symlink_to(unshare)
    (tmp_path / "ws").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _WEAK_CHILD, str(tmp_path / "ws"), mode, marker],
        capture_output=True,
        text=True,
        timeout=_CHILD_TIMEOUT_S,
        cwd=ROOT,
        env={"PATH": str(bin_dir), "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout)
    if result["kind"] not in ("unshare", "unshare-user"):
        pytest.skip(f"unshare --net does not work here ({result['kind']})")
    return result


def test_the_old_path_checks_still_refuse(tmp_path: Path) -> None:
    tools = _tools(tmp_path)
    for path in ("../x", "/etc/passwd", "a/../../x", ""):
        with pytest.raises(SecurityViolation) as err:
            tools["read_file"].fn(path=path)
        assert err.value.failure.code == "ERR_SANDBOX_ESCAPE"


def test_a_symlink_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.txt").write_text("s")
    (tmp_path / "ws" / "link").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(SecurityViolation, match="'link' is a symlink"):
        _tools(tmp_path / "ws")["read_file"].fn(path="link")


def test_files_inside_the_workspace_are_read_written_and_listed(tmp_path: Path) -> None:
    tools = _tools(tmp_path)
    assert tools["write_file"].fn(path="d/notes.txt", content="héllo") == {
        "path": "d/notes.txt",
        "bytes": 6,
    }
    assert tools["read_file"].fn(path="d/notes.txt") == "héllo"
    assert tools["list_dir"].fn(path=".") == ["d/"]


def test_the_shell_tool_runs_in_the_workspace(tmp_path: Path) -> None:
    if not sandbox_holds():
        pytest.skip("bubblewrap is not installed (make sandbox)")
    (tmp_path / "here.txt").write_text("x")
    result = _shell(tmp_path, "ls; echo HOME=$HOME; env")
    assert result["exit_code"] == 0
    assert "here.txt" in result["output"]
    assert sorted(line.split("=")[0] for line in result["output"].splitlines()[2:]) == [
        "HOME",
        "LANG",
        "PATH",
        "PWD",
    ]


def test_under_bubblewrap_the_shell_cannot_write_outside_the_workspace(tmp_path: Path) -> None:
    if not sandbox_holds():
        pytest.skip("bubblewrap is not installed (make sandbox)")
    (tmp_path / "ws").mkdir()
    outside = tmp_path / "outside.txt"
    result = _shell(tmp_path / "ws", f"echo x > {outside}; echo y > inside.txt; echo z > ../o")
    assert sorted(os.listdir(tmp_path)) == ["ws"]
    assert (tmp_path / "ws" / "inside.txt").read_text() == "y\n"
    assert result["exit_code"] == 0


def test_the_output_kept_is_bounded_and_the_command_still_finishes(tmp_path: Path) -> None:
    if not sandbox_holds():
        pytest.skip("bubblewrap is not installed (make sandbox)")
    command = "head -c 3000000 /dev/zero | tr '\\0' a; echo done > finished"
    result = _shell(tmp_path, command)
    assert result["exit_code"] == 0
    assert result["output"] == "a" * MAX_OUTPUT_BYTES
    assert (tmp_path / "finished").read_text() == "done\n"


def test_with_only_unshare_the_shell_tool_is_refused_and_health_says_it_does_not_hold(
    tmp_path: Path,
) -> None:
    result = _without_bubblewrap(tmp_path, "strict")
    assert result["code"] == "ERR_SANDBOX_ESCAPE"
    message = str(result["refused"])
    assert "isolates the network only" in message
    assert "install bubblewrap" in message
    assert "allow_weak_sandbox" in message
    assert result["holds"] is False
    health = result["health"]
    assert isinstance(health, dict)
    assert health["sandbox_holds"] is False
    assert health["ok"] is False
    assert any("isolates the network only" in p for p in health["problems"])
    assert not (tmp_path / "ws" / "ran").exists()


def test_with_only_unshare_the_shell_tool_runs_when_the_user_accepted_it(tmp_path: Path) -> None:
    marker = f"300.{uuid.uuid4().int % 10**9}"
    result = _without_bubblewrap(tmp_path, "weak", marker)
    assert result.get("exit_code") == 0, result
    assert result["output"] == "ran\n"
    assert _left_running(marker) == []  # what stayed in the command's process group


def test_health_reports_bubblewrap_as_holding() -> None:
    if not sandbox_holds():
        pytest.skip("bubblewrap is not installed (make sandbox)")
    assert sandbox_kind() == "bubblewrap"
