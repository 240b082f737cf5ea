"""Help and errors in one style on every command: no type tags such as ``<bool>``, help
text never read as markup, one-liners not broken mid-sentence, ``-h`` as ``--help``, and
every bad flag one ``error: WHERE: what`` line with exit code 2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.cli.support import invoke, write_suite
from typer.testing import CliRunner

from backstay.cli import app
from backstay.cli._errors import USAGE_ERROR
from backstay.cli._lazy import COMMANDS

WIDE = CliRunner(env={"COLUMNS": "1000"})


def _help(*command: str) -> str:
    result = WIDE.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", [(), ("batch",), ("run",), ("retry",), ("escalations", "list")])
def test_help_shows_no_type_tags(command: tuple[str, ...]) -> None:
    shown = _help(*command)
    assert not re.search(r"<(bool|path|int|float|str|list\[[a-z]+\])>", shown), shown


def test_brackets_in_help_are_shown_as_written() -> None:
    assert "pip install 'backstay[ray]'" in _help("batch")


def test_each_one_liner_is_shown_on_one_line() -> None:
    shown = _help()
    for listed in COMMANDS:
        one_liner = " ".join(listed.help.split())
        assert one_liner in shown, listed.name


@pytest.mark.parametrize("command", [(), ("status",), ("escalations", "list")])
def test_dash_h_is_help(command: tuple[str, ...]) -> None:
    result = invoke(*command, "-h")
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--concurrency", "0"), "error: --concurrency: must be at least 1, got 0"),
        (("--concurrency", "x"), "error: --concurrency: must be a whole number, got 'x'"),
        (("--lease-ttl", "0"), "error: --lease-ttl: must be at least 0.1, got 0"),
    ],
)
def test_a_bad_flag_is_one_error_line_in_backstays_format(
    tmp_path: Path, flags: tuple[str, ...], said: str
) -> None:
    suite = write_suite(tmp_path, ["a"])
    result = invoke("batch", suite, "--state-dir", tmp_path / "s", *flags)
    assert result.exit_code == USAGE_ERROR
    assert result.output.splitlines() == [said, "backstay batch --help says what it takes"]
    assert not (tmp_path / "s").exists()


def test_a_missing_argument_is_named() -> None:
    result = invoke("batch", "--state-dir", "s")
    assert result.exit_code == USAGE_ERROR
    assert result.output.startswith("error: SUITE.yaml: required")


@pytest.mark.parametrize("group", ["escalations", "config", "agents"])
def test_a_group_without_its_command_shows_its_help_and_no_error_line(group: str) -> None:
    result = invoke(group)
    assert "Usage:" in result.output
    assert "error:" not in result.output


def test_a_bad_flag_of_backstay_itself_is_one_error_line() -> None:
    result = invoke("--bogus")
    assert result.exit_code == USAGE_ERROR
    assert result.output.splitlines() == [
        "error: no such option: --bogus",
        "backstay --help says what it takes",
    ]
