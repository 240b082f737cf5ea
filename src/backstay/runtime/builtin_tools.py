"""Built-in tools, sandboxed: ``read_file``, ``write_file``, ``list_dir`` confined to a
workspace (``backstay.runtime.workspace``), and ``shell`` run in the sandbox of
``backstay.runtime.sandbox``.

``workspace_tools(root)`` returns them; they still run only when the ``ToolPolicy``
allows them, like any tool. ``shell`` refuses to run (``SecurityViolation``) where no
sandbox that holds is available (bubblewrap), unless ``allow_weak_sandbox`` accepts
``unshare --net``, which isolates the network only. Outputs are bounded
(``MAX_READ_BYTES``, ``MAX_OUTPUT_BYTES``); a command is killed with every process of its
sandbox after ``SHELL_TIMEOUT_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from pathlib import Path
from typing import Any, Final

from backstay.runtime.errors import SecurityViolation
from backstay.runtime.gated import current_tool_gate
from backstay.runtime.sandbox import sandbox_kind, shell_prefix
from backstay.runtime.tools import Tool
from backstay.runtime.workspace import Workspace

__all__ = ["MAX_OUTPUT_BYTES", "MAX_READ_BYTES", "SHELL_TIMEOUT_S", "workspace_tools"]

MAX_READ_BYTES: Final = 256 * 1024
MAX_OUTPUT_BYTES: Final = 64 * 1024
SHELL_TIMEOUT_S: Final = 30.0
# The environment bwrap (or unshare) itself starts with; bubblewrap clears it for the
# command and sets its own (``backstay.runtime.sandbox``).
_SHELL_ENV: Final = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
_READ_CHUNK: Final = 64 * 1024


def _schema(**props: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": d} for name, d in props.items()},
        "required": list(props),
    }


def workspace_tools(
    root: str | os.PathLike[str], *, allow_weak_sandbox: bool = False
) -> tuple[Tool, ...]:
    """The four built-in tools over the workspace ``root``. ``allow_weak_sandbox`` lets
    ``shell`` run under ``unshare --net`` where bubblewrap is not available."""
    ws = Workspace(root)

    def read_file(path: str) -> str:
        return ws.read_bytes(path, MAX_READ_BYTES).decode("utf-8", errors="replace")

    def write_file(path: str, content: str) -> dict[str, Any]:
        data = content.encode("utf-8")
        ws.write_bytes(path, data)
        return {"path": path, "bytes": len(data)}

    def list_dir(path: str = ".") -> list[str]:
        return ws.list_names(path)

    async def shell(command: str) -> dict[str, Any]:
        return await _shell(ws.root, command, allow_weak_sandbox=allow_weak_sandbox)

    return (
        Tool(name="read_file", fn=read_file, description="Read a file of the workspace.",
             parameters=_schema(path="path relative to the workspace")),
        Tool(name="write_file", fn=write_file, description="Write a file of the workspace.",
             parameters=_schema(path="path relative to the workspace", content="the text")),
        Tool(name="list_dir", fn=list_dir, description="List a directory of the workspace.",
             parameters=_schema(path="path relative to the workspace")),
        Tool(name="shell", fn=shell, description="Run a command in the workspace, no network.",
             parameters=_schema(command="a shell command")),
    )  # fmt: skip


def _refusal(kind: str | None) -> SecurityViolation:
    if kind is None:
        found = "no sandbox to run commands in"
    else:
        found = f"the only sandbox here ({kind}: unshare --net) isolates the network only"
    return SecurityViolation(
        f"the shell tool does not run: {found}; install bubblewrap (make sandbox, or "
        "apt-get install bubblewrap), or accept network-only isolation "
        "(safety.allow_weak_sandbox: true)",
        code="ERR_SANDBOX_ESCAPE",
    )


async def _read_bounded(stream: asyncio.StreamReader, limit: int) -> bytes:
    """The first ``limit`` bytes of ``stream``, read to its end (the rest dropped)."""
    kept = bytearray()
    while chunk := await stream.read(_READ_CHUNK):
        if len(kept) < limit:
            kept += chunk[: limit - len(kept)]
    return bytes(kept)


def _resource_limits() -> list[str]:
    """``prlimit`` bounding the command's address space and CPU time by the run's
    ``memory_limit_mb`` and ``cpu_time_limit_s`` (nothing outside a run, or without
    ``prlimit``)."""
    gate = current_tool_gate()
    prlimit = shutil.which("prlimit")
    if gate is None or prlimit is None:
        return []
    limits = gate.limits
    args = [prlimit]
    if limits.memory_limit_mb is not None:
        args.append(f"--as={limits.memory_limit_mb * 1024 * 1024}")
    if limits.cpu_time_limit_s is not None:
        args.append(f"--cpu={limits.cpu_time_limit_s}")
    return [*args, "--"] if len(args) > 1 else []


async def _shell(root: Path, command: str, *, allow_weak_sandbox: bool) -> dict[str, Any]:
    kind = sandbox_kind()
    prefix = shell_prefix(root)
    if prefix is None or (kind != "bubblewrap" and not allow_weak_sandbox):
        raise _refusal(kind)
    proc = await asyncio.create_subprocess_exec(
        *_resource_limits(),
        *prefix,
        "/bin/sh",
        "-c",
        command,
        cwd=root,
        env=_SHELL_ENV,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None  # noqa: S101 - stdout=PIPE above
    try:
        async with asyncio.timeout(SHELL_TIMEOUT_S):
            out = await _read_bounded(proc.stdout, MAX_OUTPUT_BYTES)
            await proc.wait()
    except BaseException:
        if proc.returncode is None:
            # The group holds bwrap and its PID namespace's init: killing them ends every
            # process of the sandbox (under unshare, only those still in the group).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        raise
    if kind != "bubblewrap":  # what was left running in the group (setsid escapes it)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    text = out.decode("utf-8", errors="replace")
    return {"exit_code": proc.returncode, "output": text}
