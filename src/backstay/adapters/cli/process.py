"""Subprocess plumbing, written once: every agent CLI runs through ``run_process``.

* The child starts in a new session, so it leads its own process group: every process it
  spawns can be killed with it. stdin is ``/dev/null`` (a CLI waiting on stdin would
  otherwise hang), or, with ``stdin_text``, a file holding that text: created 0600 in the
  attempt's output directory and unlinked before the child starts, so it is readable only
  through the child's descriptor and nothing of it stays on disk (how the agent CLIs get
  their prompt without putting it on the command line, where ``ps`` shows it to every
  local user). The environment is exactly the mapping given, nothing inherited, plus
  ``ATTEMPT_TAG`` naming the attempt (``backstay.adapters.cli.orphans``: how a resumed
  engine finds the agents of a runner that was killed).
* stdout and stderr stream into the ``Capture`` files in chunks of ``CHUNK_BYTES``; the
  parent keeps only the last ``TAIL_CHARS`` of each, so memory stays flat whatever the
  child prints.
* At the wall-clock deadline, or after ``stall_timeout_s`` without any output, the whole
  group gets SIGTERM, ``kill_grace_s`` to finish, then SIGKILL; the exit code is then
  ``TIMEOUT_EXIT_CODE`` (124, as ``timeout(1)`` reports). A cancelled caller kills the
  group the same way before the cancellation propagates.
* When ``run_process`` returns, no process of the group is alive: what the child left
  running when it exited is killed too, and so is every process that left the group but
  still carries the attempt's ``ATTEMPT_TAG`` (``setsid cmd &``, a daemon; Linux ``/proc``
  only), with its own process group. Only a process that both left the group and
  cleared its environment escapes. The pipes are read until end of file for at most
  ``_DRAIN_S`` after that, then closed: a descendant holding them open cannot hold up
  the attempt, and no pipe transport outlives the call (or its event loop).
* ``stop`` (an ``asyncio.Event``) ends the run early, on the adapter's word: the group is
  killed the same way, and the outcome says ``stopped`` (for a CLI that would go on
  retrying an error by itself, when backstay's policy should decide instead).
* ``launcher`` prefixes the command: ``("nsenter", "-t", PID, "-n", "--")`` runs the CLI
  in the network namespace of process PID (``backstay.testing.netns``), ``("nice",)`` at a
  lower priority. A launcher must run the command in the same process group (every
  ``exec``-style wrapper does: nsenter, env, nice, taskset, unshare without
  ``--fork``), so the deadline and stall kills still reach the command.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import os
import secrets
import shlex
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from backstay._checks import check_launcher, check_number
from backstay.adapters.capture import Capture, Stream
from backstay.adapters.cli._pump import CHUNK_BYTES, TAIL_CHARS, Activity, LineCallback, Pump
from backstay.adapters.cli.orphans import ATTEMPT_TAG, attempt_tag, kill_tagged
from backstay.adapters.contract import TIMEOUT_EXIT_CODE
from backstay.errors import ConfigError
from backstay.events.tracecontext import trace_env

__all__ = [
    "CHUNK_BYTES",
    "DEFAULT_KILL_GRACE_S",
    "TAIL_CHARS",
    "ProcessOutcome",
    "run_process",
    "run_process_sync",
]

DEFAULT_KILL_GRACE_S: Final = 2.0
# After the group is gone, how long the pipes may take to reach end of file. Only a
# process that left the group (its own setsid) can hold them open longer.
_DRAIN_S: Final = 5.0
# ``Process.wait()`` also waits for the pipes to close, which a grandchild holding them
# delays: the leader's own exit is noticed by looking at its return code this often.
_EXIT_POLL_S: Final = 0.05


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ProcessOutcome:
    """How a process ended. ``exit_code`` is shell-style: 128 + N for a signal N, and
    ``TIMEOUT_EXIT_CODE`` whenever backstay killed the group (deadline or stall). The
    tails are the raw last ``TAIL_CHARS`` of each stream, for classification: they stay in
    memory and are never written anywhere unredacted."""

    pid: int
    exit_code: int
    duration_s: float
    timed_out: bool = False
    stalled: bool = False
    stopped: bool = False
    stdout_tail: str = ""
    stderr_tail: str = ""

    @property
    def killed(self) -> bool:
        """Whether backstay killed the process group (deadline, stall or ``stop``)."""
        return self.timed_out or self.stalled or self.stopped


class _Verdict(enum.Enum):
    EXITED = "exited"
    TIMED_OUT = "timed out"
    STALLED = "stalled"
    STOPPED = "stopped"


def _validate(
    *,
    argv: Sequence[str],
    cwd: Path | str,
    env: Mapping[str, str],
    timeout_s: float,
    stall_timeout_s: float | None,
    kill_grace_s: float,
    launcher: Sequence[str],
) -> tuple[str, ...]:
    """Check every argument; the whole command line (``launcher`` then ``argv``)."""
    prefix = check_launcher(launcher, where="launcher")
    if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
        raise ConfigError(f"must be a non-empty list of strings, got {argv!r}", where="argv")
    if not Path(cwd).is_dir():
        raise ConfigError(f"is not a directory: {str(cwd)!r}", where="cwd")
    if not isinstance(env, Mapping):
        raise ConfigError(f"must be a mapping of strings, got {type(env).__name__}", where="env")
    for key, value in env.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ConfigError("names and values must be strings", where=f"env[{key!r}]")
    check_number(timeout_s, where="timeout_s", above=True)
    if stall_timeout_s is not None:
        check_number(stall_timeout_s, where="stall_timeout_s", above=True)
    check_number(kill_grace_s, where="kill_grace_s")
    return (*prefix, *argv)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _kill_group(proc: asyncio.subprocess.Process, grace_s: float) -> None:
    """SIGTERM to the group, up to ``grace_s`` for the leader to exit, then SIGKILL to
    whatever is left. The SIGKILL is sent even if this wait is itself cancelled."""
    try:
        _signal_group(proc.pid, signal.SIGTERM)
        if grace_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), grace_s)
    finally:
        _signal_group(proc.pid, signal.SIGKILL)


async def _watch(
    proc: asyncio.subprocess.Process,
    activity: Activity,
    deadline: float,
    stall_timeout_s: float | None,
    stop: asyncio.Event | None = None,
) -> _Verdict:
    """Wait for the leader to exit, the deadline to pass, the output to stall, or ``stop``."""
    waiter = asyncio.ensure_future(proc.wait())
    try:
        while proc.returncode is None:
            if stop is not None and stop.is_set():
                return _Verdict.STOPPED
            now = time.monotonic()
            horizon = deadline
            if stall_timeout_s is not None:
                horizon = min(horizon, activity.last + stall_timeout_s)
            if horizon <= now:
                return _Verdict.TIMED_OUT if now >= deadline else _Verdict.STALLED
            await asyncio.wait({waiter}, timeout=min(horizon - now, _EXIT_POLL_S))
        return _Verdict.EXITED
    finally:
        waiter.cancel()


async def _settle(proc: asyncio.subprocess.Process, pumps: list[asyncio.Task[None]]) -> None:
    """Let the pipes reach end of file and the pumps write the rest, within ``_DRAIN_S``."""
    done, pending = await asyncio.wait(
        [*pumps, asyncio.ensure_future(proc.wait())], timeout=_DRAIN_S
    )
    for task in pending:
        task.cancel()
    for task in done:
        task.result()  # a failed capture write surfaces here


def _stdin_file(folder: Path, text: str) -> int:
    """A read descriptor, at offset 0, of a file holding ``text`` that no longer has a
    name: written 0600 in ``folder`` and unlinked at once."""
    path = folder / f".stdin-{secrets.token_hex(8)}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.unlink(path)
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


async def _spawn(
    command: Sequence[str], *, cwd: Path | str, env: Mapping[str, str], stdin: int
) -> tuple[asyncio.SubprocessTransport, asyncio.subprocess.Process]:
    """``asyncio.create_subprocess_exec``, keeping the transport so that it can be closed."""
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: asyncio.subprocess.SubprocessStreamProtocol(limit=CHUNK_BYTES, loop=loop),
        *command,
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    return transport, asyncio.subprocess.Process(transport, protocol, loop)


def _shell_code(returncode: int | None) -> int:
    if returncode is None:
        return -1
    return 128 - returncode if returncode < 0 else returncode


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    timeout_s: float,
    capture: Capture,
    stall_timeout_s: float | None = None,
    on_stdout_line: LineCallback | None = None,
    kill_grace_s: float = DEFAULT_KILL_GRACE_S,
    launcher: Sequence[str] = (),
    on_stderr_line: LineCallback | None = None,
    stop: asyncio.Event | None = None,
    stdin_text: str | None = None,
) -> ProcessOutcome:
    """Run ``argv`` in ``cwd`` with exactly ``env``, stream its output into ``capture``,
    and return how it ended (see the module docstring for the guarantees).

    ``on_stdout_line`` receives each stdout line, raw and without its newline, as it
    arrives (for adapters that read a JSON stream); ``on_stderr_line`` the same for
    stderr. Setting ``stop`` kills the group early (``ProcessOutcome.stopped``); it is
    looked at every 50 ms. ``launcher`` is a command prefix that runs ``argv`` (see the
    module docstring). ``stdin_text`` is what the child reads on stdin (UTF-8, through an
    unlinked 0600 file: see the module docstring) instead of end of file. Raises
    ``ConfigError`` for invalid arguments and ``OSError`` when the program cannot be
    started; both before any process exists.
    """
    command = _validate(
        argv=argv,
        cwd=cwd,
        env=env,
        timeout_s=timeout_s,
        stall_timeout_s=stall_timeout_s,
        kill_grace_s=kill_grace_s,
        launcher=launcher,
    )
    tag = attempt_tag(capture.output_dir)
    stdin = asyncio.subprocess.DEVNULL
    if stdin_text is not None:
        stdin = _stdin_file(capture.output_dir, stdin_text)
    started = time.monotonic()
    try:
        transport, proc = await _spawn(
            command, cwd=cwd, env={**env, **trace_env(), ATTEMPT_TAG: tag}, stdin=stdin
        )
    finally:
        if stdin_text is not None:
            os.close(stdin)
    try:
        verdict, out, err = await _supervise(
            proc,
            capture,
            command,
            started=started,
            timeout_s=timeout_s,
            stall_timeout_s=stall_timeout_s,
            kill_grace_s=kill_grace_s,
            lines=(on_stdout_line, on_stderr_line),
            stop=stop,
        )
    finally:
        transport.close()  # the pipes too, while the loop still runs
    duration = time.monotonic() - started
    if verdict is _Verdict.EXITED or verdict is _Verdict.STOPPED:
        exit_code = _shell_code(proc.returncode)
    else:
        exit_code = TIMEOUT_EXIT_CODE
    await capture.alog(f"pid {proc.pid} ended with exit code {exit_code} after {duration:.3f} s")
    return ProcessOutcome(
        pid=proc.pid,
        exit_code=exit_code,
        duration_s=duration,
        timed_out=verdict is _Verdict.TIMED_OUT,
        stalled=verdict is _Verdict.STALLED,
        stopped=verdict is _Verdict.STOPPED,
        stdout_tail=out.tail,
        stderr_tail=err.tail,
    )


async def _supervise(
    proc: asyncio.subprocess.Process,
    capture: Capture,
    command: Sequence[str],
    *,
    started: float,
    timeout_s: float,
    stall_timeout_s: float | None,
    kill_grace_s: float,
    lines: tuple[LineCallback | None, LineCallback | None],
    stop: asyncio.Event | None,
) -> tuple[_Verdict, Pump, Pump]:
    """Pump the output, watch the run, and leave nothing of it running."""
    assert proc.stdout is not None  # noqa: S101 - PIPE
    assert proc.stderr is not None  # noqa: S101 - PIPE
    tag = attempt_tag(capture.output_dir)
    await capture.alog(f"started pid {proc.pid}: {shlex.join(command)}")
    activity = Activity(started)
    out = Pump(proc.stdout, Stream.STDOUT, capture, activity, lines[0])
    err = Pump(proc.stderr, Stream.STDERR, capture, activity, lines[1])
    pumps = [asyncio.create_task(out.run()), asyncio.create_task(err.run())]
    try:
        verdict = await _watch(proc, activity, started + timeout_s, stall_timeout_s, stop)
        if verdict is _Verdict.EXITED:
            _signal_group(proc.pid, signal.SIGKILL)  # whatever the child left running
        else:
            await capture.alog(f"{verdict.value}: killing process group {proc.pid}")
            await _kill_group(proc, kill_grace_s)
        escaped = await asyncio.to_thread(kill_tagged, tag)
        if escaped:
            await capture.alog(
                f"killed {len(escaped)} process(es) that had left process group {proc.pid}: "
                + " ".join(map(str, escaped))
            )
        await _settle(proc, pumps)
    except BaseException:
        # Cancelled, or a capture write failed: nothing may outlive this call.
        await _kill_group(proc, kill_grace_s)
        kill_tagged(tag)
        for task in pumps:
            task.cancel()
        raise
    return verdict, out, err


def run_process_sync(
    argv: Sequence[str],
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    timeout_s: float,
    capture: Capture,
    stall_timeout_s: float | None = None,
    on_stdout_line: LineCallback | None = None,
    kill_grace_s: float = DEFAULT_KILL_GRACE_S,
    launcher: Sequence[str] = (),
    on_stderr_line: LineCallback | None = None,
    stop: asyncio.Event | None = None,
    stdin_text: str | None = None,
) -> ProcessOutcome:
    """``run_process`` for callers outside asyncio (it runs its own event loop; calling it
    from a running loop raises ``RuntimeError``). Ctrl-C kills the group too. ``stop`` may
    only be set from the callbacks (they run on that loop)."""
    return asyncio.run(
        run_process(
            argv,
            cwd=cwd,
            env=env,
            timeout_s=timeout_s,
            capture=capture,
            stall_timeout_s=stall_timeout_s,
            on_stdout_line=on_stdout_line,
            kill_grace_s=kill_grace_s,
            launcher=launcher,
            on_stderr_line=on_stderr_line,
            stop=stop,
            stdin_text=stdin_text,
        )
    )
