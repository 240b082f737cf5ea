"""``backstay gateway``: the command serves until SIGTERM, refuses a non-loopback address
without --allow-remote and a token, and prints no key."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path
from typing import Final

from tests.gateway.helpers import CANARY_KEY, claude

from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario

MAIN: Final = "from backstay.cli import main; main()"
WAIT_S: Final = 30.0


def _command(*args: str) -> list[str]:
    return [sys.executable, "-c", MAIN, "gateway", *args]


def test_a_non_loopback_host_is_a_usage_error() -> None:
    done = subprocess.run(
        _command("--host", "0.0.0.0"),  # noqa: S104 - refused, never bound
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )
    assert done.returncode == 2
    assert "--allow-remote" in done.stderr
    assert "Traceback" not in done.stderr


def test_allow_remote_without_a_token_is_a_usage_error() -> None:
    env = {k: v for k, v in os.environ.items() if k != "BACKSTAY_GATEWAY_TOKEN"}
    done = subprocess.run(
        _command("--host", "0.0.0.0", "--allow-remote"),  # noqa: S104
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
        env=env,
    )
    assert done.returncode == 2
    assert "needs a token" in done.stderr


def _first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(WAIT_S):
            return ""
    return proc.stdout.readline()


def test_the_command_serves_retries_and_stops_on_sigterm(tmp_path: Path) -> None:
    scenario = Scenario(faults=(Fault(kind=FaultKind.OVERLOADED, first=1),))
    with FakeProvider(scenario) as fake:
        proc = subprocess.Popen(
            _command("--port", "0", "--upstream", fake.url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = _first_line(proc)
            assert line.startswith("gateway listening on http://127.0.0.1:")
            text = claude(line.split()[-1])
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=WAIT_S)
        stats = fake.stats()
    assert proc.returncode == 0
    assert text.startswith("Fake reply to:")
    assert stats.requests == 2
    assert CANARY_KEY not in line + out + err
