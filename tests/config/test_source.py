"""Each effective value keeps where it came from: file:line, variable, --set, or default."""

from __future__ import annotations

from pathlib import Path

from tests.config.helpers import load, write

from backstay.config import SourceKind

FILE = """\
retry:
  default_policy: child
  policies:
    parent:
      max_attempts: 5
    child:
      extends: parent
      initial_delay_s: 0.3
  operation_policies:
    llm: parent
  budget:
    ratio: 0.2
"""


def test_a_value_from_the_file_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, FILE)
    source = load(path).source_of("retry.policies.child.initial_delay_s")
    assert (source.kind, str(source)) == (SourceKind.FILE, f"{path}:8")


def test_an_inherited_value_names_where_the_parent_set_it(tmp_path: Path) -> None:
    path = write(tmp_path, FILE)
    source = load(path).source_of("retry.policies.child.max_attempts")
    assert str(source) == f"{path}:5 (inherited from policy 'parent')"


def test_a_value_from_a_variable_names_the_variable(tmp_path: Path) -> None:
    env = {"BACKSTAY__RETRY__BUDGET__RATIO": "0.3"}
    source = load(write(tmp_path, FILE), environ=env).source_of("retry.budget.ratio")
    assert (source.kind, str(source)) == (SourceKind.ENV, "BACKSTAY__RETRY__BUDGET__RATIO")


def test_a_value_from_set_names_the_flag(tmp_path: Path) -> None:
    config = load(write(tmp_path, FILE), overrides=["retry.budget.ratio=0.4"])
    assert config.effective["retry.budget.ratio"].value == 0.4
    assert config.source_of("retry.budget.ratio").kind is SourceKind.CLI


def test_a_default_value_says_so(tmp_path: Path) -> None:
    source = load(write(tmp_path, FILE)).source_of("retry.policies.parent.backoff")
    assert (source.kind, str(source)) == (SourceKind.DEFAULT, "default")


def test_a_built_in_value_names_the_built_in_policy() -> None:
    source = load(None).source_of("retry.policies.standard.per_kind.rate_limit.max_delay_s")
    assert str(source) == "built-in policy 'standard'"


def test_an_unmapped_operation_shows_the_default_policy(tmp_path: Path) -> None:
    effective = load(write(tmp_path, FILE)).effective["retry.operation_policies.network"]
    assert effective.value == "child"
    assert str(effective.source) == "default_policy (no policy of its own)"


def test_agent_operations_default_to_agent_dispatch(tmp_path: Path) -> None:
    effective = load(write(tmp_path, FILE)).effective["retry.operation_policies.agent"]
    assert effective.value == "agent_dispatch"
    assert str(effective.source) == "default"


def test_a_mapped_operation_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, FILE)
    assert str(load(path).source_of("retry.operation_policies.llm")) == f"{path}:10"


def test_the_default_policy_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, FILE)
    assert str(load(path).source_of("retry.default_policy")) == f"{path}:2"


def test_a_whole_mapping_set_at_once_is_the_source_of_each_value() -> None:
    config = load(None, overrides=["retry.budget={ratio: 0.1, window_s: 5}"])
    assert config.source_of("retry.budget.window_s").kind is SourceKind.CLI


def test_an_override_replaces_the_source_of_what_it_replaces(tmp_path: Path) -> None:
    config = load(write(tmp_path, FILE), overrides=["retry.budget={window_s: 5}"])
    assert "retry.budget.ratio" not in config.effective
    assert config.source_of("retry.budget.window_s").kind is SourceKind.CLI


def test_to_dict_gives_value_source_and_origin(tmp_path: Path) -> None:
    path = write(tmp_path, FILE)
    data = load(path).to_dict()
    assert data["file"] == str(path)
    assert data["values"]["retry.budget.ratio"] == {
        "value": 0.2,
        "source": f"{path}:12",
        "origin": "file",
    }
