"""What ``Capture`` writes is private and redacted of personal data: its directory 0700,
its logs and ``metrics.json`` 0600 (whatever the umask), no e-mail or card number in them."""

from __future__ import annotations

import datetime as _dt
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from backstay.adapters.capture import Capture, Stream
from backstay.adapters.usage import Usage

EMAIL = "jane.canary@example.com"
CARD = "4111 1111 1111 1111"


@pytest.fixture
def open_umask() -> Iterator[None]:
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def test_the_logs_hold_no_personal_data_even_when_split_across_writes(tmp_path: Path) -> None:
    with Capture(tmp_path / "out") as capture:
        capture.write(Stream.STDOUT, f"reply: write to {EMAIL[:6]}")
        capture.write(Stream.STDOUT, f"{EMAIL[6:]} card {CARD}\n")
        capture.log(f"user | {EMAIL}")
    for name in ("stdout.log", "agent.log"):
        text = (tmp_path / "out" / name).read_text(encoding="utf-8")
        assert EMAIL not in text
        assert "4111" not in text
        assert "[EMAIL]" in text
    assert "[CARD]" in (tmp_path / "out" / "stdout.log").read_text(encoding="utf-8")


def test_the_directory_and_files_are_private_whatever_the_umask(
    tmp_path: Path, open_umask: None
) -> None:
    out = tmp_path / "a" / "b" / "out"
    now = _dt.datetime.now(_dt.UTC)
    with Capture(out) as capture:
        capture.log("started")
        capture.write_metrics(
            usage=Usage(),
            duration_s=0.1,
            exit_code=0,
            failure=None,
            started_at=now,
            ended_at=now,
        )
    for directory in (tmp_path / "a", tmp_path / "a" / "b", out):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    files = sorted(out.iterdir())
    assert {p.name for p in files} >= {"agent.log", "stdout.log", "stderr.log", "metrics.json"}
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
