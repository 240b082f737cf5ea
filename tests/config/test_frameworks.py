"""The ``frameworks`` section of backstay.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.config.helpers import load, problems, write

from backstay.config import AdapterOptions, Suite, load_suite, with_framework, with_frameworks
from backstay.errors import ConfigError
from backstay.policy.registry import PolicyRegistry


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


def _suite(tmp_path: Path, adapter_options: str = "") -> Suite:
    (tmp_path / "suite.yaml").write_text(
        "suite: s\n"
        f"adapters:\n  agent-runtime: {{agent: 'm:f'{adapter_options}}}\n"
        "tasks:\n  - {id: t, adapter: agent-runtime, model: m, prompt: hi}\n",
        encoding="utf-8",
    )
    return load_suite(tmp_path / "suite.yaml", registry=PolicyRegistry())


def test_a_framework_section_gives_its_adapter_defaults_the_suite_can_override(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        "frameworks:\n"
        "  agent-runtime:\n"
        "    limits: {max_steps: 4, max_tokens: 900}\n"
        "    safety: {allowed_tools: [read_file], sandbox: false}\n"
        "    human_in_the_loop: {approval_tools: [write_file]}\n",
    )
    config = load(path)
    suite = with_frameworks(
        _suite(tmp_path, ", limits: {max_tokens: 500}, allowed_tools: [list_dir]"),
        config.frameworks,
    )
    options = suite.options_for("agent-runtime").config
    assert options["limits"] == {"max_steps": 4, "max_tokens": 500}
    assert options["allowed_tools"] == ("list_dir",)
    assert options["approval_tools"] == ("write_file",)
    assert options["builtin_tools"] is False


def test_a_suite_using_a_disabled_framework_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "frameworks:\n  agent-runtime: {enabled: false}\n")
    with pytest.raises(ConfigError, match=r"'agent-runtime', which backstay\.yaml disables"):
        with_frameworks(_suite(tmp_path), load(path).frameworks)


def test_one_adapters_options_take_the_section_as_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, "frameworks:\n  langgraph:\n    limits: {max_steps: 4, max_tokens: 9}\n")
    options = AdapterOptions(adapter="langgraph", config={"limits": {"max_tokens": 5}})
    applied = with_framework(options, load(path).frameworks, used_by="--adapter is")
    assert applied.config["limits"] == {"max_steps": 4, "max_tokens": 5}
    other = AdapterOptions(adapter="autogen")
    assert with_framework(other, load(path).frameworks, used_by="--adapter is") == other


def test_the_weak_sandbox_opt_out_reaches_the_adapter_and_must_be_a_boolean(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path, "frameworks:\n  agent-runtime:\n    safety: {allow_weak_sandbox: true}\n"
    )
    suite = with_frameworks(_suite(tmp_path), load(path).frameworks)
    assert suite.options_for("agent-runtime").config["allow_weak_sandbox"] is True
    wrong = write(tmp_path, "frameworks:\n  agent-runtime:\n    safety: {allow_weak_sandbox: 1}\n")
    (found,) = problems(wrong)
    assert found.startswith(f"{wrong}:3: frameworks.agent-runtime.safety.allow_weak_sandbox:")
    with pytest.raises(
        ConfigError, match=r"agent-runtime\.allow_weak_sandbox: must be true or false"
    ):
        _suite(tmp_path, ", allow_weak_sandbox: 'yes'")
