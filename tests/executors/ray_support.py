"""A real Ray cluster for the executor tests: one head node on 127.0.0.1, started by the
test setup (``ray start --head --block`` in its own session, a free port, a private temp
dir), and stopped by the PIDs of its processes; batches against the fake provider whose
request log is the witness of what ran."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import yaml
from tests.adapters.support import CANARY_KEY

from backstay.executors._ray_cluster import LOCAL_ENV
from backstay.store import STATE_FILE

ROOT: Final = Path(__file__).resolve().parents[2]
RAY_BIN: Final = Path(sys.executable).with_name("ray")
BACKSTAY_BIN: Final = Path(sys.executable).with_name("backstay")
KEY_VAR: Final = "RAY_TEST_ANTHROPIC_KEY"
MODEL: Final = "claude-haiku-4-5"
START_TIMEOUT_S: Final = 240.0  # `ray start` takes 3-15 s, far more on a loaded 2-core box
STOP_GRACE_S: Final = 3.0  # gcs_server ignores SIGTERM for 15 s: KILL after this
WORKER_TITLE: Final = "ray::drive_on_worker"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_env(**extra: str) -> dict[str, str]:
    """The environment of the cluster's processes and of the batch drivers: loopback-only
    Ray, this checkout's sources, the canary API key; no cluster named by RAY_ADDRESS."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(LOCAL_ENV)
    paths = [str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env[KEY_VAR] = CANARY_KEY
    env.update(extra)
    return env


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    return parents


def descendants(pid: int) -> list[int]:
    """Every live process under ``pid``."""
    parents = _parents()
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [child for child, ppid in parents.items() if ppid == parent]
        found += kids
        frontier += kids
    return found


def cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@dataclasses.dataclass
class RayCluster:
    """A running head node: its address, its ``ray start`` process, its temp dir."""

    address: str
    head: subprocess.Popen[bytes]
    temp_dir: Path
    env: dict[str, str]

    def processes(self) -> list[int]:
        return [self.head.pid, *descendants(self.head.pid)]

    def busy_workers(self) -> list[int]:
        """The workers driving a run right now (Ray titles them after the function)."""
        return [p for p in descendants(self.head.pid) if cmdline(p).startswith(WORKER_TITLE)]

    def raylet(self) -> int:
        return next(p for p in descendants(self.head.pid) if "/raylet/raylet" in cmdline(p))

    def stop(self) -> list[int]:
        """Stop every process of the cluster by PID (TERM, then KILL); those still alive."""
        pids = self.processes()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.head.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.head.wait(timeout=5)
        deadline = time.monotonic() + 5
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        return [p for p in pids if alive(p)]


@contextlib.contextmanager
def ray_cluster(num_cpus: int = 4) -> Iterator[RayCluster]:
    """A head node on 127.0.0.1 for the block; every process of it gone afterwards."""
    temp_dir = Path(tempfile.mkdtemp(prefix="bsray", dir="/tmp"))  # short: socket paths
    port = free_port()
    env = process_env()
    log = temp_dir / "head.log"
    command = [
        str(RAY_BIN), "start", "--head", "--block", f"--port={port}",
        f"--num-cpus={num_cpus}", "--num-gpus=0", "--include-dashboard=false",
        "--disable-usage-stats", f"--temp-dir={temp_dir}",
        "--object-store-memory=100000000",
    ]  # fmt: skip
    with log.open("wb") as out:
        head = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    cluster = RayCluster(address=f"127.0.0.1:{port}", head=head, temp_dir=temp_dir, env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while b"Ray runtime started" not in log.read_bytes():
            if head.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start failed: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)
        yield cluster
    finally:
        left = cluster.stop()
        shutil.rmtree(temp_dir, ignore_errors=True)  # Ray's session logs, sockets
        assert not left, f"Ray processes left running: {left}"


# -- a batch against the fake provider -----------------------------------------------------


def write_suite(tmp_path: Path, url: str, tasks: int, *, name: str = "raybatch") -> Path:
    suite = {
        "suite": name,
        "defaults": {
            "adapter": "anthropic-api",
            "model": MODEL,
            "timeout_s": 30,
            "policy": {"extends": "agent_dispatch", "max_attempts": 20, "initial_delay_s": 0.05},
        },
        "adapters": {"anthropic-api": {"api_key_env": KEY_VAR, "base_url": url, "max_tokens": 20}},
        "tasks": [{"id": f"t{i:02d}", "prompt": f"Say hello {i}"} for i in range(tasks)],
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def backstay(
    *args: str | Path, env: Mapping[str, str], cwd: Path, log: Path
) -> subprocess.Popen[bytes]:
    """``backstay ARGS`` in its own session (so nothing it starts outlives the test),
    output to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(BACKSTAY_BIN), *map(str, args)],
            env=dict(env),
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def count(state_dir: Path, query: str) -> int:
    """``query``'s count now, read as another process would (read-only)."""
    uri = f"file:{state_dir / STATE_FILE}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            return int(conn.execute(query).fetchone()[0])
    except sqlite3.Error:
        return 0


def tasks(state_dir: Path) -> dict[str, str]:
    """operation id → state."""
    with contextlib.closing(sqlite3.connect(state_dir / STATE_FILE)) as conn:
        return dict(conn.execute("SELECT operation_id, state FROM backstay_tasks").fetchall())


def succeeded_at(state_dir: Path) -> dict[str, float]:
    """operation id → when its success was recorded (the end of its succeeded attempt)."""
    with contextlib.closing(sqlite3.connect(state_dir / STATE_FILE)) as conn:
        rows = conn.execute(
            "SELECT operation_id, ended_at FROM backstay_attempts WHERE outcome = 'succeeded'"
        ).fetchall()
    return {op: epoch(ended) for op, ended in rows}


def epoch(value: Any) -> float:
    """A stored time (epoch seconds or ISO text) as epoch seconds."""
    if isinstance(value, int | float):
        return float(value)
    from datetime import datetime  # noqa: PLC0415

    return datetime.fromisoformat(str(value)).timestamp()


def served(log: Path) -> list[dict[str, Any]]:
    """The fake provider's generation requests."""
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [e for e in entries if e["path"] == "/v1/messages"]


def session_processes(sid: int) -> list[int]:
    """The live processes of session ``sid`` (a process started with
    ``start_new_session`` leads the session of its own pid)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
                if int(fields[3]) == sid and fields[0] != "Z":
                    found.append(int(entry.name))
    return found


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in (Path("/proc") / str(pid) / "fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    return inodes


def listening_addresses(pids: list[int]) -> set[str]:
    """The addresses (hex, as /proc/net/tcp* has them) the TCP sockets of ``pids`` listen
    on: ``0100007F`` is 127.0.0.1, ``00000000`` every interface."""
    inodes = set().union(*(_socket_inodes(pid) for pid in pids)) if pids else set()
    found = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in (Path("/proc/net") / table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    found.add(fields[1].rpartition(":")[0])
    return found
