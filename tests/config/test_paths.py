"""Dotted key paths, with quoted parts and list items."""

from __future__ import annotations

import pytest

from backstay import ConfigError
from backstay.config._paths import format_path, parse_path


def test_a_dotted_path_splits_on_dots() -> None:
    assert parse_path("retry.budget.ratio", where="x") == ("retry", "budget", "ratio")


def test_a_quoted_part_keeps_its_dots() -> None:
    assert parse_path('a."b.c".d', where="x") == ("a", "b.c", "d")


@pytest.mark.parametrize("text", ["", "a.", ".a", "a..b", 'a."b', 'a"b"'])
def test_a_malformed_path_is_an_error(text: str) -> None:
    with pytest.raises(ConfigError, match="malformed key path"):
        parse_path(text, where="--set")


def test_formatting_quotes_parts_that_need_it_and_attaches_list_items() -> None:
    assert format_path(("retry", "rate_limits", "gpt-4.1", "x", "[2]")) == (
        'retry.rate_limits."gpt-4.1".x[2]'
    )


def test_formatting_and_parsing_round_trip() -> None:
    path = ("retry", "rate_limits", "openai/gpt-4.1", "requests_per_minute")
    assert parse_path(format_path(path), where="x") == path
