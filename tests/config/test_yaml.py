"""Reading YAML: syntax errors with their line, duplicate keys, odd keys, aliases."""

from __future__ import annotations

from pathlib import Path

from tests.config.helpers import load, problems, write


def test_a_syntax_error_names_its_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  policies:\n    x: {max_attempts: 3\n  budget: {}\n")
    assert problems(path) == [
        f"{path}:4: invalid YAML: did not find expected ',' or '}}' (column 9)"
    ]


def test_bad_indentation_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  policies:\n    x:\n      max_attempts: 3\n     y: 1\n")
    (problem,) = problems(path)
    assert problem.startswith(f"{path}:5: invalid YAML: ")


def test_a_key_given_twice_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  default_policy: standard\n  default_policy: no_retry\n")
    assert problems(path) == [f"{path}:3: retry.default_policy: is given twice (first on line 2)"]


def test_a_key_that_is_not_text_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  policies:\n    1: {max_attempts: 2}\n")
    assert problems(path) == [f"{path}:3: retry.policies: keys must be text, got 1"]


def test_an_alias_that_contains_itself_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "retry:\n  rate_limits: &a {x: *a}\n")
    assert f"{path}:2: retry.rate_limits.x: an alias refers to itself" in problems(path)


def test_anchors_and_merge_keys_work(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        retry:
          policies:
            base: &base {max_attempts: 4, initial_delay_s: 0.2}
            other:
              <<: *base
              max_attempts: 6
        """,
    )
    config = load(path)
    assert config.policy("other").max_attempts == 6
    assert config.policy("other").initial_delay_s == 0.2


def test_a_python_tag_on_a_mapping_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "retry: !!python/object:os.system {}\n")
    assert problems(path) == [
        f"{path}:1: retry: unsupported YAML tag tag:yaml.org,2002:python/object:os.system"
    ]


def test_a_python_tag_on_a_value_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "retry: {default_policy: !!python/name:os.system ''}\n")
    (problem,) = problems(path)
    assert problem.startswith(f"{path}:1: invalid YAML: could not determine a constructor")
