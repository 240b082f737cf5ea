"""The ``frameworks`` section of backstay.yaml."""

from __future__ import annotations

from pathlib import Path

from tests.config.helpers import load, problems, write


def test_a_framework_section_becomes_runtime_settings(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "frameworks:\n"
        "  pydantic-ai:\n"
        "    limits: {max_tool_calls: 3, max_cost_usd: 0.5}\n"
        "    safety: {allowed_tools: [read_file], cacheable_tools: [read_file]}\n"
        "    human_in_the_loop: {approval_tools: [send_mail]}\n",
    )
    settings = load(path).frameworks["pydantic-ai"].runtime_settings()
    assert settings.limits.max_tool_calls == 3
    assert settings.limits.max_cost_usd == 0.5
    assert settings.tools.allowed == {"read_file"}
    assert settings.tools.cacheable == {"read_file"}
    assert settings.tools.approval == {"send_mail"}


def test_a_disabled_framework_says_so(tmp_path: Path) -> None:
    path = write(tmp_path, "frameworks:\n  autogen: {enabled: false}\n")
    assert load(path).frameworks["autogen"].enabled is False


def test_a_wrong_limit_is_named_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "frameworks:\n  langgraph:\n    limits: {max_steps: 0}\n")
    (found,) = problems(path)
    assert found.startswith(f"{path}:3: frameworks.langgraph.limits.max_steps:")


def test_an_unknown_framework_key_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "frameworks:\n  langgraph:\n    limit: {}\n")
    (found,) = problems(path)
    assert "frameworks.langgraph.limit: unknown key (did you mean 'limits'?)" in found


def test_framework_settings_show_in_the_effective_values(tmp_path: Path) -> None:
    path = write(tmp_path, "frameworks:\n  langgraph:\n    limits: {max_steps: 7}\n")
    config = load(path)
    assert config.effective["frameworks.langgraph.limits.max_steps"].value == 7
