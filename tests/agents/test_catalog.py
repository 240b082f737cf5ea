"""The catalogue: the five CLIs with their pins, and CliSpec's checks."""

from __future__ import annotations

from typing import Any

import pytest

from backstay.agents import CLIS, CliSpec, PackageKind, cli_names, cli_spec
from backstay.errors import ConfigError


def test_the_five_cli_adapters_each_have_an_entry() -> None:
    assert cli_names() == ("claude-code", "codex", "gemini-cli", "aider", "opencode")


@pytest.mark.parametrize("spec", CLIS.values(), ids=list(CLIS))
def test_every_pin_is_a_supported_version(spec: CliSpec) -> None:
    assert spec.pinned in spec.supported


@pytest.mark.parametrize(
    ("name", "requirement"),
    [
        ("claude-code", "@anthropic-ai/claude-code@2.1.197"),
        ("codex", "@openai/codex@0.169.0"),
        ("gemini-cli", "@google/gemini-cli@0.61.0"),
        ("aider", "aider-chat==0.86.2"),
        ("opencode", "opencode-ai@1.18.33"),
    ],
)
def test_the_requirement_is_written_as_its_installer_reads_it(name: str, requirement: str) -> None:
    assert cli_spec(name).requirement == requirement


# What each CLI prints for --version (agent-clis facts, section 2).
@pytest.mark.parametrize(
    ("name", "printed", "version"),
    [
        ("claude-code", "2.1.197 (Claude Code)\n", "2.1.197"),
        ("codex", "codex-cli 0.169.0\n", "0.169.0"),
        ("gemini-cli", "0.61.0\n", "0.61.0"),
        ("aider", "aider 0.86.2\n", "0.86.2"),
        ("opencode", "1.18.33\n", "1.18.33"),
        ("opencode", "1.19.0-beta.2\n", "1.19.0-beta.2"),
        ("codex", "codex-cli\n", None),
    ],
)
def test_the_version_is_read_from_what_version_prints(
    name: str, printed: str, version: str | None
) -> None:
    assert cli_spec(name).parse_version(printed) == version


def test_aider_seeds_the_price_list_and_uses_the_local_copy() -> None:
    aider = cli_spec("aider")
    assert aider.kind is PackageKind.PYPI
    assert list(aider.home_seed) == [".aider/caches/model_prices_and_context_window.json"]
    assert aider.offline_env == {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        cli_spec("cursor", where="NAME")
    assert caught.value.where == "NAME"
    assert "known: claude-code, codex, gemini-cli, aider, opencode" in str(caught.value)


BASE: dict[str, Any] = {
    "name": "x",
    "kind": "npm",
    "package": "x",
    "binary": "x",
    "pinned": "1.0.0",
    "supported": ("1.0.0",),
}


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"name": "Bad Name"}, "name"),
        ({"kind": "cargo"}, "x.kind"),
        ({"binary": "bin/x"}, "x.binary"),
        ({"pinned": "2.0.0"}, "x.pinned"),
        ({"supported": "1.0.0"}, "x.supported"),
        ({"supported": ("one",)}, "x.supported[0]"),
        ({"min_node": "20"}, "x.min_node"),
        ({"offline_env": {"A": 1}}, "x.offline_env"),
        ({"home_seed": {"../outside": "f"}}, "x.home_seed"),
    ],
)
def test_an_invalid_spec_names_the_field(change: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigError) as caught:
        CliSpec(**(BASE | change))
    assert caught.value.where == where


def test_a_spec_is_frozen_and_its_mappings_read_only() -> None:
    spec = CliSpec(**(BASE | {"offline_env": {"A": "1"}}))
    with pytest.raises(TypeError):
        spec.offline_env["B"] = "2"  # type: ignore[index]
