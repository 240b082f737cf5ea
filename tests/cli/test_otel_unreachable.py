"""Telemetry never slows the work: a batch whose OTLP endpoint is a closed 127.0.0.1 port
finishes as without it, says so in ONE warning line, never prints the exporter's own
retry records, and exits without waiting out the exporter's retries (about 25 s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Final

from tests.cli.support import write_suite
from tests.redis_server import free_port

from backstay.cli._state import ALL_SUCCEEDED

# Generous: the exporter's own retries alone waited about 25 s after the summary.
EXIT_BOUND_S: Final = 20.0


def test_an_unreachable_endpoint_costs_one_line_and_no_wait(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ["a"])
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
    }
    command = [sys.executable, "-c", "from backstay.cli import main; main()"]
    proc = subprocess.Popen(
        [*command, "batch", str(suite), "--state-dir", str(tmp_path / "s")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=EXIT_BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == ALL_SUCCEEDED, out + err
    assert "1 task: 1 succeeded" in out
    lines = err.splitlines()
    assert lines == [
        f"warning: OpenTelemetry export to {endpoint} failed; the batch goes on, and what "
        "it could not export is dropped"
    ], err
