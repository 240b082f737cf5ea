"""run_process's ``stdin_text``: the child reads it on stdin from a private file that no
longer has a name, and it is never on the command line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.adapters.support import python

from backstay.adapters.capture import Capture, Stream
from backstay.adapters.cli.process import ProcessOutcome, run_process_sync

PROMPT = "canary prompt jane.canary@example.com: -- --help ünïcode\nsecond line\n"


@pytest.fixture
def capture(tmp_path: Path) -> Iterator[Capture]:
    with Capture(tmp_path / "out") as cap:
        yield cap


def run(code: str, capture: Capture, text: str) -> ProcessOutcome:
    return run_process_sync(
        python(code),
        cwd=capture.output_dir,
        env={},
        timeout_s=10.0,
        capture=capture,
        stdin_text=text,
    )


def test_the_child_reads_the_text_on_stdin(capture: Capture) -> None:
    outcome = run("import sys; print(repr(sys.stdin.buffer.read().decode()))", capture, PROMPT)
    assert outcome.exit_code == 0
    assert outcome.stdout_tail == f"{PROMPT!r}\n"


def test_a_text_larger_than_a_pipe_buffer_or_an_argument_arrives_whole(capture: Capture) -> None:
    big = "x" * 300_000 + "end"
    outcome = run("import sys; d = sys.stdin.read(); print(len(d), d[-3:])", capture, big)
    assert outcome.stdout_tail == f"{len(big)} end\n"


def test_stdin_is_a_0600_file_without_a_name_and_nothing_stays_on_disk(capture: Capture) -> None:
    code = (
        "import json, os, sys\n"
        "st = os.fstat(0)\n"
        "print(json.dumps({'mode': st.st_mode & 0o777, 'links': st.st_nlink,\n"
        "                  'argv': open('/proc/self/cmdline', 'rb').read().decode()}))"
    )
    outcome = run(code, capture, PROMPT)
    seen = json.loads(outcome.stdout_tail)
    assert (seen["mode"], seen["links"]) == (0o600, 0)
    assert "canary" not in seen["argv"]
    left = [p.name for p in capture.output_dir.iterdir() if p.name.startswith(".stdin")]
    assert left == []
    assert "canary" not in capture.path(Stream.AGENT).read_text()


def test_without_stdin_text_stdin_is_still_empty(capture: Capture) -> None:
    outcome = run_process_sync(
        python("import sys; print(repr(sys.stdin.read()))"),
        cwd=capture.output_dir,
        env={},
        timeout_s=10.0,
        capture=capture,
    )
    assert outcome.stdout_tail == "''\n"
