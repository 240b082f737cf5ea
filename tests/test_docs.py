"""The documentation says what the code does."""

from __future__ import annotations

import re
from pathlib import Path

from backstay import CODES

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| `(ERR_[A-Z0-9_]+)` \| (yes|no) \|", re.MULTILINE)


def _documented() -> dict[str, tuple[str, bool]]:
    text = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    rows: dict[str, tuple[str, bool]] = {}
    section = ""
    for line in text.splitlines():
        heading = re.match(r"^## `(\w+)`", line)
        if heading:
            section = heading.group(1)
        row = ROW.match(line)
        if row:
            rows[row.group(1)] = (section, row.group(2) == "yes")
    return rows


def test_every_code_is_documented_under_its_kind_with_its_retryability() -> None:
    expected = {code: (str(info.kind), info.retryable) for code, info in CODES.items()}
    assert _documented() == expected


def test_readme_names_the_two_quick_start_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo" in readme
    assert "make test" in readme


def test_ci_runs_what_the_readme_says() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
