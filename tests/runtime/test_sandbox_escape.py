"""Escape attempts against the shell tool's bubblewrap sandbox and the file tools, through
the real parts: bubblewrap, a real SQLite file outside the workspace, real sockets, real
processes. Every loop is bounded in count and time; every process left is killed by PID."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from backstay.runtime import SecurityViolation, Tool, builtin_tools
from backstay.runtime.builtin_tools import workspace_tools
from backstay.runtime.sandbox import sandbox_holds

pytestmark = pytest.mark.skipif(
    not sandbox_holds(), reason="bubblewrap is not installed or cannot run here (make sandbox)"
)

ROOT = Path(__file__).resolve().parents[2]
CANARY = "sk-ant-canary-" + uuid.uuid4().hex
_CHILD_TIMEOUT_S = 60.0
_GONE_WITHIN_S = 3.0


@pytest.fixture
def outside() -> Iterator[Path]:
    """A state-dir-like directory outside ``/tmp`` (which the sandbox replaces by an empty
    tmpfs): ``state.sqlite`` holding a canary, and a workspace several levels below."""
    base = Path(tempfile.mkdtemp(prefix="backstay-escape-", dir="/var/tmp"))
    try:
        with contextlib.closing(sqlite3.connect(base / "state.sqlite")) as db:
            db.execute("create table backstay_tasks (spec_json text)")
            db.execute("insert into backstay_tasks values (?)", (f"jane {CANARY}",))
            db.commit()
        (base / "runs" / "t" / "run_01" / "workspace").mkdir(parents=True)
        yield base
    finally:
        subprocess.run(["rm", "-rf", "--", str(base)], check=False, timeout=30)


def _workspace(base: Path) -> Path:
    return base / "runs" / "t" / "run_01" / "workspace"


def _tools(root: Path) -> dict[str, Tool]:
    return {t.name: t for t in workspace_tools(root)}


Shell = Callable[..., Coroutine[Any, Any, dict[str, Any]]]


def _shell_of(tools: dict[str, Tool]) -> Shell:
    return cast("Shell", tools["shell"].fn)


def _shell(root: Path, command: str) -> dict[str, Any]:
    return asyncio.run(_shell_of(_tools(root))(command=command))


def _pids_running(marker: str) -> list[int]:
    """The PIDs of the processes whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            if marker.encode() in cmdline and int(entry) != os.getpid():
                found.append(int(entry))
    return found


def _left_running(marker: str) -> list[int]:
    """The processes holding ``marker`` still there after ``_GONE_WITHIN_S`` (killed)."""
    deadline = time.monotonic() + _GONE_WITHIN_S
    left = _pids_running(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _pids_running(marker)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left


def _marker() -> str:
    return f"300.{uuid.uuid4().int % 10**9}"


_CHILD = """
import asyncio, json, os, sys
from backstay.runtime.builtin_tools import workspace_tools
shell = next(t for t in workspace_tools(sys.argv[1]) if t.name == "shell")
own = open("/proc/self/environ", "rb").read().decode(errors="replace")
command = (
    "env; for f in /proc/[0-9]*/environ; do tr '\\\\0' '\\\\n' < $f; done; "
    f"tr '\\\\0' '\\\\n' < /proc/{os.getpid()}/environ; "
    f"tr '\\\\0' '\\\\n' < /proc/{os.getppid()}/environ; "
    "echo PROCS=$(ls -d /proc/[0-9]* | wc -l)"
)
out = asyncio.run(shell.fn(command=command))
print(json.dumps({"own": own, **out}))
"""


def test_the_api_key_in_the_host_process_environment_is_not_readable(outside: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(_workspace(outside))],
        capture_output=True,
        text=True,
        timeout=_CHILD_TIMEOUT_S,
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "ANTHROPIC_API_KEY": CANARY},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:].replace(CANARY, "<canary>")
    result = json.loads(done.stdout)
    # Booleans only: a failure never prints the canary.
    held = CANARY in result["own"]
    output = result["output"]
    leaked = CANARY in output or "ANTHROPIC_API_KEY" in output
    assert held  # the host process holds it: the probe is meaningful
    assert not leaked
    # The sandbox sees its own processes only (its init, the shell, the probes).
    procs = int(output.rsplit("PROCS=", 1)[1].split()[0])
    assert 1 <= procs <= 6


def test_a_state_file_outside_the_workspace_is_not_readable(outside: Path) -> None:
    state = outside / "state.sqlite"
    command = f"cat ../../../state.sqlite; cat {state}; ls -a ../../..; ls -a {outside}"
    # The host process holds the store open meanwhile: no descriptor of it is inherited.
    with contextlib.closing(sqlite3.connect(state)) as db:
        db.execute("select count(*) from backstay_tasks").fetchone()
        result = _shell(_workspace(outside), f"{command}; ls -l /proc/[0-9]*/fd/")
    leaked = CANARY in result["output"]
    assert not leaked
    assert str(state) not in result["output"].replace(f"cat: {state}:", "")
    lines = result["output"].splitlines()
    assert "state.sqlite" not in lines  # not listed in either directory
    assert "runs" in lines  # the directories above the workspace are empty stand-ins
    assert sum("No such file" in line for line in lines) == 2


def test_writes_outside_the_workspace_never_reach_the_host(outside: Path) -> None:
    name = f"OUTSIDE-{uuid.uuid4().hex}"
    targets = [outside / name, Path("/var/tmp", name), Path("/usr", name), Path("/etc", name)]
    command = "; ".join(f"echo x > {t}" for t in targets) + f"; echo x > ../../../{name}"
    command += f"; echo x > ../{name}; echo in > inside.txt"
    _shell(_workspace(outside), command)
    assert [t for t in targets if t.exists()] == []
    assert sorted(os.listdir(outside)) == ["runs", "state.sqlite"]
    assert sorted(os.listdir(_workspace(outside))) == ["inside.txt"]
    with sqlite3.connect(outside / "state.sqlite") as db:
        assert db.execute("select count(*) from backstay_tasks").fetchone() == (1,)


_CONNECT = """python3 - <<'EOF'
import socket
for family, address in {targets!r}:
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(address if isinstance(address, str) else tuple(address))
        print("CONNECTED", address)
    except OSError as err:
        print("REFUSED", address, type(err).__name__)
EOF"""


def test_host_unix_sockets_and_loopback_servers_are_unreachable(outside: Path) -> None:
    path = str(outside / "host.sock")
    abstract = "\0backstay-escape-" + uuid.uuid4().hex
    servers = []
    try:
        for family, address in (
            (socket.AF_UNIX, path),
            (socket.AF_UNIX, abstract),
            (socket.AF_INET, ("127.0.0.1", 0)),
        ):
            server = socket.socket(family, socket.SOCK_STREAM)
            servers.append(server)
            server.bind(address)
            server.listen(1)
            server.setblocking(False)
        port = servers[2].getsockname()[1]
        targets = [
            (int(socket.AF_UNIX), path),
            (int(socket.AF_UNIX), abstract),
            (int(socket.AF_INET), ["127.0.0.1", port]),
        ]
        result = _shell(_workspace(outside), _CONNECT.format(targets=targets))
        assert result["output"].count("REFUSED") == 3, result["output"]
        assert "CONNECTED" not in result["output"]
        for server in servers:
            with pytest.raises(BlockingIOError):
                server.accept()
    finally:
        for server in servers:
            server.close()


def test_no_background_process_outlives_the_call(tmp_path: Path) -> None:
    marker = _marker()
    command = (
        f"nohup sleep {marker} >/dev/null 2>&1 & setsid sleep {marker} >/dev/null 2>&1 & "
        f"(sleep {marker} &) ; sleep 0.2; echo started"
    )
    result = _shell(tmp_path, command)
    assert result["output"] == "started\n"
    assert _left_running(marker) == []


def test_a_command_past_its_timeout_is_killed_with_every_process_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(builtin_tools, "SHELL_TIMEOUT_S", 1.0)
    marker = _marker()
    command = f"setsid sleep {marker} & nohup sleep {marker} & sleep {marker}"
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        _shell(tmp_path, command)
    assert time.monotonic() - started < 10
    assert _left_running(marker) == []


def test_a_cancelled_call_leaves_no_process(tmp_path: Path) -> None:
    marker = _marker()
    shell = _shell_of(_tools(tmp_path))

    async def cancel_soon() -> None:
        task = asyncio.create_task(shell(command=f"setsid sleep {marker} & sleep {marker}"))
        await asyncio.sleep(0.5)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(cancel_soon())
    assert _left_running(marker) == []


# Swaps the directories ``r`` and ``w`` for symlinks to the outside directory and back,
# as fast as it can, until the file ``stop`` appears or its time is up.
_FLIPPER = """python3 - {out} {seconds} <<'EOF'
import os, shutil, sys, time
out, end = sys.argv[1], time.monotonic() + float(sys.argv[2])
flips = 0
while time.monotonic() < end and not os.path.exists("stop"):
    for name in ("r", "w"):
        spare = name + "_"
        try:
            os.rename(name, spare)
            os.symlink(out, name)
            os.unlink(name)
            os.rename(spare, name)
            flips += 1
        except OSError:  # write_file made the directory in a gap: put the real one back
            try:
                if os.path.islink(name):
                    os.unlink(name)
                elif os.path.isdir(name) and os.path.isdir(spare):
                    shutil.rmtree(name)
                if os.path.isdir(spare):
                    os.rename(spare, name)
            except OSError:
                pass
print("flips", flips)
EOF"""


def _race(tools: dict[str, Tool], seconds: float, iterations: int) -> dict[str, int]:
    counts = {"outside_reads": 0, "inside_reads": 0, "refused": 0, "errors": 0, "calls": 0}
    deadline = time.monotonic() + seconds
    for _ in range(iterations):
        if time.monotonic() > deadline:
            break
        counts["calls"] += 1
        try:
            text = str(tools["read_file"].fn(path="r/secret.txt"))
            counts["outside_reads" if "OUTSIDE" in text else "inside_reads"] += 1
        except SecurityViolation:
            counts["refused"] += 1
        except OSError:
            counts["errors"] += 1
        try:
            tools["write_file"].fn(path="w/pwn.txt", content="x")
        except SecurityViolation:
            counts["refused"] += 1
        except OSError:
            counts["errors"] += 1
    return counts


@pytest.mark.parametrize(
    ("seconds", "iterations"),
    [(3.0, 5_000), pytest.param(20.0, 200_000, marks=pytest.mark.slow)],
    ids=["3s", "20s"],
)
def test_a_symlink_flipping_process_never_lets_the_file_tools_out(
    tmp_path: Path, seconds: float, iterations: int
) -> None:
    ws, out = tmp_path / "ws", tmp_path / "out"
    for directory in (ws / "r", ws / "w", out):
        directory.mkdir(parents=True)
    (ws / "r" / "secret.txt").write_text("INSIDE")
    (out / "secret.txt").write_text("OUTSIDE")
    tools = _tools(ws)

    async def attack() -> tuple[dict[str, int], dict[str, Any]]:
        flipper = asyncio.create_task(
            _shell_of(tools)(command=_FLIPPER.format(out=out, seconds=seconds + 5))
        )
        await asyncio.sleep(0.3)
        try:
            counts = await asyncio.to_thread(_race, tools, seconds, iterations)
        finally:
            (ws / "stop").write_text("")
            async with asyncio.timeout(15):
                flipped = await flipper
        return counts, flipped

    counts, flipped = asyncio.run(attack())
    assert counts["outside_reads"] == 0, counts
    assert sorted(os.listdir(out)) == ["secret.txt"], counts
    assert (out / "secret.txt").read_text() == "OUTSIDE"
    # The race was run: the flipper flipped, and the tools met its symlinks.
    assert int(flipped["output"].split()[-1]) > 100, flipped
    assert counts["refused"] > 0, counts
    assert counts["inside_reads"] > 0, counts
