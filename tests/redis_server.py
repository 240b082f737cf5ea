"""A real ``redis-server`` (Debian's package) for the tests: one per test process.

Started on 127.0.0.1 on a free port, without persistence, in a temporary directory, with
the settings backstay needs (``noeviction``); stopped by its PID. Tests share it and keep
apart by namespace (each gets a fresh one), so no test flushes another's keys. Without the
binary (``scripts/install-test-deps`` installs it) the tests that need it are skipped.
"""

from __future__ import annotations

import dataclasses
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Final

import redis

READY_TIMEOUT_S: Final = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclasses.dataclass
class RedisServer:
    """A running server: its URL, port and process; ``stop()`` ends it by PID."""

    process: subprocess.Popen[bytes]
    port: int
    directory: Path

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self, *, keep_dir: bool = False) -> None:
        """End the server by its PID (TERM, then KILL); remove its directory unless
        ``keep_dir`` (a restart on the same directory finds its append-only file)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if not keep_dir:
            shutil.rmtree(self.directory, ignore_errors=True)

    def crash(self) -> None:
        """SIGKILL the server, as a crash would, keeping its files."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def start_redis(*extra: str, port: int | None = None, directory: Path | None = None) -> RedisServer:
    """A new ``redis-server``, answering PING; ``extra``: more ``--name value`` settings."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise FileNotFoundError("redis-server is not installed (scripts/install-test-deps)")
    port = free_port() if port is None else port
    directory = Path(tempfile.mkdtemp(prefix="backstay-redis-")) if directory is None else directory
    directory.mkdir(parents=True, exist_ok=True)
    argv = [
        binary,
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--save", "",
        "--appendonly", "no",
        "--maxmemory-policy", "noeviction",
        "--protected-mode", "yes",
        "--dir", str(directory),
        "--daemonize", "no",
        "--loglevel", "warning",
        *extra,
    ]  # fmt: skip
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = RedisServer(process=process, port=port, directory=directory)
    client = redis.Redis(port=port, socket_connect_timeout=0.2)
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        while True:
            try:
                if client.ping():
                    return server
            except redis.exceptions.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    server.stop()
                    raise RuntimeError(f"redis-server on port {port} did not start") from None
                time.sleep(0.02)
    finally:
        client.close()
