"""``backstay fake-provider serve``: a real server process, stopped by its PID."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import httpx
import pytest

BACKSTAY = str(Path(sys.executable).with_name("backstay"))
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0


def _first_line(stream: IO[str]) -> str:
    """The first line of ``stream``, waiting at most START_TIMEOUT_S."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True).start()
    return lines.get(timeout=START_TIMEOUT_S)


@pytest.fixture
def serve(tmp_path: Path) -> object:
    processes: list[subprocess.Popen[str]] = []

    def start(*args: str) -> tuple[subprocess.Popen[str], str]:
        process = subprocess.Popen(
            [BACKSTAY, "fake-provider", "serve", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        processes.append(process)
        assert process.stdout is not None
        line = _first_line(process.stdout)
        assert line.startswith("fake provider listening on http://127.0.0.1:"), line
        return process, line.rsplit(" ", 1)[1].strip()

    yield start
    for process in processes:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait(STOP_TIMEOUT_S)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_serve_answers_injects_faults_and_stops_cleanly_on_sigterm(
    serve: object, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    process, url = serve(  # type: ignore[operator]
        "--fault", "rate_limit:first=1:retry_after_s=2", "--rpm", "100", "--log", str(log)
    )
    body = {"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(base_url=url, timeout=10) as client:
        first = client.post("/v1/chat/completions", json=body)
        second = client.post("/v1/chat/completions", json=body)
        stats = client.get("/_backstay/stats").json()
    assert (first.status_code, first.headers["retry-after"]) == (429, "2")
    assert second.status_code == 200
    assert second.headers["x-ratelimit-limit-requests"] == "100"
    assert stats["by_fault"] == {"rate_limit": 1}
    os.kill(process.pid, signal.SIGTERM)
    assert process.wait(STOP_TIMEOUT_S) == 0
    assert process.stderr is not None
    assert "stopped after 2 requests" in process.stderr.read()
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [e["status"] for e in entries] == [429, 200]


def test_ctrl_c_stops_it_too(serve: object) -> None:
    process, url = serve("--port", "0")  # type: ignore[operator]
    assert httpx.get(url + "/v1beta/models", timeout=10).status_code == 200
    os.kill(process.pid, signal.SIGINT)
    assert process.wait(STOP_TIMEOUT_S) == 0


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--scenario", "bad.yaml"], "bad.yaml:2: faults[0].fault: unknown fault 'rate_limt'"),
        (["--scenario", "absent.yaml"], "absent.yaml: no such file"),
        (["--fault", "hang:first=zero"], "--fault hang:first=zero: first: must be a number"),
        (["--rpm", "0"], "--rpm: must be >= 1, got 0"),
    ],
)
def test_bad_input_exits_2_with_the_place_and_no_traceback(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    (tmp_path / "bad.yaml").write_text("faults:\n  - fault: rate_limt\n", encoding="utf-8")
    done = subprocess.run(
        [BACKSTAY, "fake-provider", "serve", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert expected in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
