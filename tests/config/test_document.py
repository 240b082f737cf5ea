"""Every problem is collected into one ConfigError, in file order, each with its place."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.config.helpers import load, problems, write

from backstay import ConfigError

MANY = """\
retry:
  default_policy: ghost
  policies:
    standard:
      max_attempts: 0
      backoff: expo
  budget:
    ratio: 3
"""


def test_every_problem_is_listed_in_line_order(tmp_path: Path) -> None:
    path = write(tmp_path, MANY)
    found = problems(path)
    assert [line.split(": ")[0] for line in found] == [f"{path}:{n}" for n in (2, 5, 6, 8)]


def test_several_problems_are_one_error_whose_where_is_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, MANY)
    with pytest.raises(ConfigError) as info:
        load(path)
    assert info.value.where == str(path)
    assert info.value.reason.startswith("4 problems:\n")


def test_one_problem_is_one_error_whose_where_is_the_line_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  budget:\n    ratio: 3\n")
    with pytest.raises(ConfigError) as info:
        load(path)
    assert info.value.where == f"{path}:3: retry.budget.ratio"
    assert info.value.reason == "must be <= 1, got 3"


def test_the_error_is_also_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such file"):
        load(tmp_path / "nope.yaml")


def test_file_problems_come_before_variable_and_flag_problems(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  budget: {ratio: 3}\n")
    found = problems(
        path,
        environ={"BACKSTAY__RETRY__BUDGET__WINDOW_S": "0"},
        overrides=["retry.budget.min_retries_per_s=-1"],
    )
    assert [line.split(": ")[0] for line in found] == [
        f"{path}:2",
        "BACKSTAY__RETRY__BUDGET__WINDOW_S",
        "--set",
    ]
