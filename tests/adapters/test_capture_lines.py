"""``Capture.log``: a line of ``agent.log`` is its time stamp and the message redacted
apart from it, and a part line written before it comes first, as it was."""

from __future__ import annotations

import re
from pathlib import Path

from backstay.adapters.capture import Capture, Stream
from backstay.redact import register_secret

CANARY = "canary-capture-lines-4f1d2a9b7c"
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00"


def test_each_line_is_a_stamp_and_the_message_redacted(tmp_path: Path) -> None:
    register_secret(CANARY)
    with Capture(tmp_path / "out") as capture:
        for _ in range(3):  # the same message again: redacted the same
            capture.log(f"key {CANARY} for ada@example.com  ")
        capture.log("reply: 12 characters")
    lines = (tmp_path / "out" / "agent.log").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    for line in lines[:3]:
        assert re.fullmatch(rf"{STAMP} key \[REDACTED\] for \[EMAIL\]", line), line
    assert re.fullmatch(rf"{STAMP} reply: 12 characters", lines[3])
    assert CANARY not in (tmp_path / "out" / "agent.log").read_text(encoding="utf-8")


def test_a_part_line_written_first_stays_before_the_logged_line(tmp_path: Path) -> None:
    register_secret(CANARY)
    with Capture(tmp_path / "out") as capture:
        capture.write(Stream.AGENT, f"partial {CANARY} ")
        capture.log("then a line")
        capture.log("and another")
    lines = (tmp_path / "out" / "agent.log").read_text(encoding="utf-8").splitlines()
    assert re.fullmatch(rf"partial \[REDACTED\] {STAMP} then a line", lines[0]), lines[0]
    assert re.fullmatch(rf"{STAMP} and another", lines[1])
