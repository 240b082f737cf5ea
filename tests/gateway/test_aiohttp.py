"""The event loop ``backstay gateway`` serves on (``backstay.gateway._aiohttp``): uvloop's
where it is installed, and the command answers on it as on asyncio's own."""

from __future__ import annotations

import selectors
import signal
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
from tests.gateway.helpers import chat

from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.gateway._aiohttp import loop_factory

uvloop = pytest.importorskip("uvloop")

MAIN: Final = "from backstay.cli import main; main()"
WAIT_S: Final = 30.0


def test_the_factory_makes_uvloops_loop() -> None:
    factory = loop_factory()
    assert factory is not None
    loop = factory()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


def _first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(WAIT_S):
            return ""
    return proc.stdout.readline()


def test_the_command_serves_and_retries_on_uvloop() -> None:
    scenario = Scenario(faults=(Fault(kind=FaultKind.OVERLOADED, first=1),))
    with FakeProvider(scenario) as fake:
        proc = subprocess.Popen(
            [sys.executable, "-c", MAIN, "gateway", "--port", "0", "--upstream", fake.url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = _first_line(proc)
            assert line.startswith("gateway listening on http://127.0.0.1:")
            maps = Path(f"/proc/{proc.pid}/maps").read_text()
            text = chat(line.split()[-1])
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=WAIT_S)
        stats = fake.stats()
    assert proc.returncode == 0
    assert "uvloop" in maps  # its loop's library is loaded in the serving process
    assert text.startswith("Fake reply to:")
    assert stats.requests == 2  # the 529, then its retry
