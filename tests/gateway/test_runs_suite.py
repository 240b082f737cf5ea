"""A suite's ``gateway`` key: ``gateway: false`` turns off the gateway ``backstay batch``
starts for the suite's agent CLIs (as ``--no-gateway`` does); anything but true or false
is a problem of the suite file, named with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from backstay.config import load_suite
from backstay.errors import ConfigError

SUITE = """suite: nightly
tasks:
  - id: hello
    adapter: anthropic-api
    model: claude-sonnet-4-5
    prompt: hi
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_suite_sends_its_agents_through_a_gateway_by_default(tmp_path: Path) -> None:
    assert load_suite(_write(tmp_path, SUITE)).gateway is True


def test_gateway_false_turns_it_off(tmp_path: Path) -> None:
    assert load_suite(_write(tmp_path, SUITE + "gateway: false\n")).gateway is False


def test_a_gateway_that_is_not_a_boolean_is_a_problem_of_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"suite.yaml:7: gateway: must be true or false"):
        load_suite(_write(tmp_path, SUITE + "gateway: sometimes\n"))
