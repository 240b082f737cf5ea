"""Writing suite files and reading the problems a load reports."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from backstay import ConfigError
from backstay.config import Suite, load_suite
from backstay.policy.registry import PolicyRegistry

# A scenario the mock adapter accepts: one successful attempt.
SCENARIO = "{attempts: [[{result: done}]]}"


def write(directory: Path, text: str, name: str = "suite.yaml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(directory: Path, text: str, *, registry: PolicyRegistry | None = None) -> Suite:
    """The suite ``text`` describes, loaded from a file in ``directory``; the built-in
    policies unless ``registry`` is given."""
    return load_suite(write(directory, text), registry=registry or PolicyRegistry())


def problems(directory: Path, text: str, *, registry: PolicyRegistry | None = None) -> list[str]:
    """Every problem line of the ``ConfigError`` loading ``text`` raises, without the
    file name in front (``"3: tasks[0].runs: must be >= 1, got 0"``)."""
    path = write(directory, text)
    with pytest.raises(ConfigError) as info:
        load_suite(path, registry=registry or PolicyRegistry())
    text = str(info.value)
    head, sep, rest = text.partition(" problems:\n")
    lines = [line.strip() for line in rest.splitlines()] if sep else [text]
    if sep:
        assert int(head.rpartition(": ")[2]) == len(lines)
    return [line.removeprefix(f"{path}: ").removeprefix(f"{path}:") for line in lines]


def one_task(body: str = "prompt: hi", *, defaults: str = "{adapter: mock, model: m}") -> str:
    """A suite with mock settings and one task ``t``; ``body`` holds the task's other keys,
    one per line."""
    keys = "".join(f"\n    {line}" for line in textwrap.dedent(body).strip().splitlines())
    return f"""\
suite: s
defaults: {defaults}
adapters:
  mock: {{scenario: {SCENARIO}}}
tasks:
  - id: t{keys}
"""
