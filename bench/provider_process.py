"""The fake provider in its own process, for the sections that measure clients against it:
``backstay fake-provider serve`` with the given flags, started and stopped by PID."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

STOP_TIMEOUT_S: Final = 30.0


@contextmanager
def serve(*flags: str) -> Iterator[str]:
    """``backstay fake-provider serve FLAGS`` in a child process; its URL once it listens.

    The server's clock (outage windows) starts just before it prints that it listens, so
    a caller that starts its work when this yields is within milliseconds of it."""
    command = [
        sys.executable,
        "-c",
        "from backstay.cli import main; main()",
        "fake-provider",
        "serve",
        *flags,
    ]
    process = subprocess.Popen(  # noqa: S603 - our own CLI, our own arguments
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError(f"the fake provider did not start: {line!r}")
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_S)
