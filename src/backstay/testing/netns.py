"""A private network namespace with only loopback up, for tests that run real agent CLIs.

Inside it a process can reach loopback and nothing else: whatever a CLI tries on its own
(update checks, telemetry, DNS, a provider it was not pointed at) fails at once, and the
fake provider the test starts inside is the only thing it can talk to.

How: a *holder* process is started with ``unshare --net`` (as root; otherwise with a user
namespace, ``unshare --user --map-root-user --net``, where the kernel allows it). It brings
``lo`` up, says it is ready, and waits on its stdin. Every other process joins its
namespace with ``nsenter`` — ``NetworkNamespace.launcher`` is that command prefix, which
``run_process`` and ``AgentRequest.launcher`` accept. The namespace has its own port
space: any port is free in it, and a server inside is not reachable from outside.

``close()`` (or leaving the ``with`` block) kills the process group of every process the
namespace started, by pid, then every process still inside the namespace (one that left
its group with its own ``setsid``), then the holder; the namespace disappears with its
last process. If the test process dies first, the holder sees its stdin close and exits.

``unavailable_reason()`` says why namespaces cannot be made here (not Linux, no
``unshare``/``nsenter``, not permitted), so tests skip with that reason.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final

__all__ = ["NamespaceUnavailable", "NetworkNamespace", "processes_in", "unavailable_reason"]

START_TIMEOUT_S: Final = 10.0
KILL_GRACE_S: Final = 2.0

# Run by the holder inside the new namespace: bring lo up (SIOCGIFFLAGS / SIOCSIFFLAGS,
# IFF_UP), say so, then live until stdin closes.
_HOLDER: Final = """
import fcntl, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0)))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1))
s.close()
print("ready", flush=True)
sys.stdin.read()
"""


def _net_of(pid: int | str) -> str | None:
    """The network namespace of ``pid`` (``net:[4026532…]``), ``None`` if it is gone or
    cannot be read."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def processes_in(namespace: str) -> list[int]:
    """The pids of the processes (zombies excluded) in the network namespace ``namespace``
    (as ``NetworkNamespace.net`` names it) that this user may inspect."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _net_of(entry.name) == namespace:
            try:
                state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
            except (OSError, IndexError):
                continue
            if state not in ("Z", "X"):
                found.append(int(entry.name))
    return found


class NamespaceUnavailable(RuntimeError):
    """Network namespaces cannot be made here; the message says why."""


def _commands(pid: int | None, *, root: bool) -> tuple[list[str], list[str]]:
    """The holder's command and the launcher for ``pid`` (as root, or in a user namespace)."""
    holder = [sys.executable, "-I", "-c", _HOLDER]
    if root:
        return (
            ["unshare", "--net", "--", *holder],
            ["nsenter", "-t", str(pid), "--net", "--"],
        )
    return (
        ["unshare", "--user", "--map-root-user", "--net", "--", *holder],
        ["nsenter", "-t", str(pid), "--user", "--net", "--preserve-credentials", "--"],
    )


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(KILL_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


class NetworkNamespace:
    """A private network namespace with only loopback up (see the module docstring).

    ::

        with NetworkNamespace() as ns:
            server = ns.popen(["backstay", "fake-provider", "serve", "--port", "8400"])
            ns.run(["claude", "-p", "hi"], env=env, timeout_s=60)

    Not thread-safe for ``start``/``close``; ``popen`` and ``run`` may be called from
    several threads.
    """

    def __init__(self) -> None:
        self._holder: subprocess.Popen[str] | None = None
        self._launcher: tuple[str, ...] = ()
        self._net: str | None = None
        self._started: list[subprocess.Popen[Any]] = []
        self._lock = threading.Lock()
        self._closed = False

    @property
    def holder_pid(self) -> int:
        """The pid whose network namespace this is."""
        if self._holder is None:
            raise RuntimeError("the namespace is not started")
        return self._holder.pid

    @property
    def launcher(self) -> tuple[str, ...]:
        """The command prefix that runs a command inside (``nsenter -t PID --net --``)."""
        if self._holder is None or self._closed:
            raise RuntimeError("the namespace is not running")
        return self._launcher

    @property
    def net(self) -> str:
        """The namespace's identity, as ``/proc/PID/ns/net`` links to it (``net:[…]``)."""
        if self._net is None:
            raise RuntimeError("the namespace is not started")
        return self._net

    def members(self) -> list[int]:
        """The pids of every process now inside the namespace, the holder included."""
        return processes_in(self.net)

    @property
    def pids(self) -> tuple[int, ...]:
        """Every process this namespace started: the holder, then each ``popen``/``run``."""
        with self._lock:
            started = [proc.pid for proc in self._started]
        return (self.holder_pid, *started)

    def start(self) -> NetworkNamespace:
        """Make the namespace; ``NamespaceUnavailable`` saying why when it cannot be."""
        if self._holder is not None:
            raise RuntimeError("the namespace is already started")
        missing = [tool for tool in ("unshare", "nsenter") if shutil.which(tool) is None]
        if not sys.platform.startswith("linux") or missing:
            raise NamespaceUnavailable(
                "network namespaces need Linux with util-linux's unshare and nsenter"
                + (f" (missing: {', '.join(missing)})" if missing else "")
            )
        root = os.geteuid() == 0
        holder_cmd, _ = _commands(None, root=root)
        holder = subprocess.Popen(  # noqa: S603 - a fixed command line
            holder_cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self._holder = holder
        ready = self._await_ready(holder)
        if ready is not None:
            self._holder = None
            raise NamespaceUnavailable(ready)
        self._launcher = tuple(_commands(holder.pid, root=root)[1])
        self._net = _net_of(holder.pid)
        if self._net is None or self._net == _net_of(os.getpid()):
            self.close()
            raise NamespaceUnavailable("the holder did not get a network namespace of its own")
        return self

    @staticmethod
    def _await_ready(holder: subprocess.Popen[str]) -> str | None:
        """``None`` once the holder says ready; else why not (and the holder is gone)."""
        stdout = holder.stdout
        assert stdout is not None  # noqa: S101 - PIPE
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(START_TIMEOUT_S)
        if line and line[0].strip() == "ready":
            return None
        _kill_group(holder)
        stderr = holder.stderr.read().strip() if holder.stderr is not None else ""
        for stream in (holder.stdin, holder.stdout, holder.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if not line:
            return f"the namespace holder did not start within {START_TIMEOUT_S:g} s"
        who = "root" if os.geteuid() == 0 else "a user namespace (not root)"
        return f"cannot make a network namespace as {who}: {stderr or 'unshare failed'}"

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` prefixed by the launcher: the command line that runs it inside."""
        return [*self.launcher, *argv]

    def popen(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> subprocess.Popen[Any]:
        """Start ``argv`` inside, in its own process group, stdin closed unless given;
        ``close()`` kills it. Other keyword arguments go to ``subprocess.Popen``."""
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        with self._lock:
            if self._closed:
                raise RuntimeError("the namespace is closed")
            proc = subprocess.Popen(  # noqa: S603 - the test's own command line
                self.command(argv),
                env=None if env is None else dict(env),
                start_new_session=True,
                **kwargs,
            )
            self._started.append(proc)
        return proc

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside to its end, text output captured; past ``timeout_s`` its
        group is killed and ``subprocess.TimeoutExpired`` raised."""
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        proc = self.popen(argv, env=env, text=True, **kwargs)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise
        finally:
            # Whatever it left running in its group goes with it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def close(self) -> None:
        """Kill every process started inside (its whole group), then any other process
        still inside, then the holder. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            started = list(self._started)
        for proc in reversed(started):
            _kill_group(proc)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        holder = self._holder
        if holder is not None and self._net is not None:
            self._kill_escaped(holder.pid)
        if holder is not None:
            if holder.stdin is not None:
                with contextlib.suppress(OSError):
                    holder.stdin.close()  # the holder's cue to exit
            deadline = time.monotonic() + KILL_GRACE_S
            while holder.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            _kill_group(holder)
            for stream in (holder.stdout, holder.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()

    def _kill_escaped(self, holder_pid: int) -> None:
        """SIGKILL every process inside but the holder (they left their process groups)."""
        assert self._net is not None  # noqa: S101 - checked by the caller
        deadline = time.monotonic() + KILL_GRACE_S
        while time.monotonic() < deadline:
            escaped = [pid for pid in processes_in(self._net) if pid != holder_pid]
            if not escaped:
                return
            for pid in escaped:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)

    def __enter__(self) -> NetworkNamespace:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@functools.cache
def unavailable_reason() -> str | None:
    """Why network namespaces cannot be made here, or ``None`` when they can (found by
    making one, once per process)."""
    try:
        with NetworkNamespace():
            return None
    except NamespaceUnavailable as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot start unshare: {exc.strerror or exc}"
