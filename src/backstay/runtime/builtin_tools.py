"""Built-in tools, sandboxed by default: ``read_file``, ``write_file``, ``list_dir``
confined to a workspace, and ``shell`` run with no network (``backstay.runtime.sandbox``).

``workspace_tools(root)`` returns them; they still run only when the ``ToolPolicy``
allows them, like any tool. Outputs are bounded (``MAX_READ_BYTES``, ``MAX_OUTPUT_BYTES``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any, Final

from backstay.runtime.errors import SecurityViolation
from backstay.runtime.sandbox import Workspace, shell_prefix
from backstay.runtime.tools import Tool

__all__ = ["MAX_OUTPUT_BYTES", "MAX_READ_BYTES", "SHELL_TIMEOUT_S", "workspace_tools"]

MAX_READ_BYTES: Final = 256 * 1024
MAX_OUTPUT_BYTES: Final = 64 * 1024
SHELL_TIMEOUT_S: Final = 30.0
_SHELL_ENV: Final = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def _schema(**props: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": d} for name, d in props.items()},
        "required": list(props),
    }


def workspace_tools(root: str | os.PathLike[str]) -> tuple[Tool, ...]:
    """The four built-in tools over the workspace ``root``."""
    ws = Workspace(root)

    def read_file(path: str) -> str:
        with ws.resolve(path).open("rb") as fh:
            return fh.read(MAX_READ_BYTES).decode("utf-8", errors="replace")

    def write_file(path: str, content: str) -> dict[str, Any]:
        target = ws.resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():  # resolve() followed it inside; never write through one
            raise SecurityViolation(f"path {path!r} is a symlink", code="ERR_SANDBOX_ESCAPE")
        target.write_text(content, encoding="utf-8")
        return {"path": path, "bytes": len(content.encode())}

    def list_dir(path: str = ".") -> list[str]:
        target = ws.resolve(path)
        return sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir())

    async def shell(command: str) -> dict[str, Any]:
        return await _shell(ws.root, command)

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


async def _shell(root: Path, command: str) -> dict[str, Any]:
    prefix = shell_prefix(root)
    if prefix is None:
        raise SecurityViolation(
            "no sandbox to run commands in (install bubblewrap)", code="ERR_SANDBOX_ESCAPE"
        )
    proc = await asyncio.create_subprocess_exec(
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
    try:
        async with asyncio.timeout(SHELL_TIMEOUT_S):
            out, _ = await proc.communicate()
    except BaseException:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the whole group: sh and its children
            await proc.wait()
        raise
    text = out[:MAX_OUTPUT_BYTES].decode("utf-8", errors="replace")
    return {"exit_code": proc.returncode, "output": text}
