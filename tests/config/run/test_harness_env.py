"""The environment ``harness_run`` gives ``backstay run``'s agent: the standard variables
of the adapter's provider that are set, the variables the options name over them, and
nothing else of the caller's environment."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from backstay.config import HarnessRun, harness_run

ENVIRON: Final = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-HarnessEnvCanary0123456789",
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:8088",
    "OPENAI_API_KEY": "sk-proj-not-for-anthropic",
    "TEAM_KEY": "team",
    "HOME": "/home/someone",
}


def _run(tmp_path: Path, *options: str, **changes: object) -> HarnessRun:
    (tmp_path / "prompt.md").write_text("hi", encoding="utf-8")
    return harness_run(
        adapter="anthropic-api",
        model="claude-haiku-4-5",
        prompt_file=tmp_path / "prompt.md",
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        adapter_options=options,
        environ=ENVIRON,
        **changes,  # type: ignore[arg-type]
    )


def test_the_agent_gets_its_providers_variables_and_nothing_else(tmp_path: Path) -> None:
    assert dict(_run(tmp_path).env) == {
        "ANTHROPIC_API_KEY": ENVIRON["ANTHROPIC_API_KEY"],
        "ANTHROPIC_BASE_URL": ENVIRON["ANTHROPIC_BASE_URL"],
    }


def test_named_variables_are_added_to_the_inherited_ones(tmp_path: Path) -> None:
    env = _run(tmp_path, "api_key_env=TEAM_KEY").env
    assert set(env) == {"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "TEAM_KEY"}


@pytest.mark.parametrize(
    ("options", "changes"),
    [(("inherit_env=false",), {}), ((), {"inherit_env": False})],
    ids=["option", "argument"],
)
def test_switched_off_the_agent_gets_only_the_named_variables(
    tmp_path: Path, options: tuple[str, ...], changes: dict[str, object]
) -> None:
    run = _run(tmp_path, "api_key_env=TEAM_KEY", *options, **changes)
    assert dict(run.env) == {"TEAM_KEY": "team"}


def test_inherit_env_must_be_true_or_false(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="inherit_env"):
        _run(tmp_path, "inherit_env=sometimes")


def test_a_fallback_of_another_adapter_gets_its_own_providers_variables(tmp_path: Path) -> None:
    run = _run(tmp_path, fallbacks=["openai-api:gpt-5-mini"])
    assert dict(run.env_for("openai-api")) == {"OPENAI_API_KEY": ENVIRON["OPENAI_API_KEY"]}
    assert "OPENAI_API_KEY" not in run.env  # the run's own adapter gets only its provider's


def test_a_fallbacks_named_key_comes_on_top_of_its_inherited_variables(tmp_path: Path) -> None:
    spare = "{adapter: openai-api, model: gpt-5-mini, api_key_env: TEAM_KEY}"
    run = _run(tmp_path, fallbacks=[spare])
    assert set(run.env_for("openai-api")) == {"OPENAI_API_KEY", "TEAM_KEY"}


@pytest.mark.parametrize(
    ("options", "changes"),
    [(("inherit_env=false",), {}), ((), {"inherit_env": False})],
    ids=["option", "argument"],
)
def test_switched_off_no_fallback_gets_its_providers_variables(
    tmp_path: Path, options: tuple[str, ...], changes: dict[str, object]
) -> None:
    spare = "{adapter: openai-api, model: gpt-5-mini, api_key_env: TEAM_KEY}"
    run = _run(tmp_path, *options, fallbacks=[spare], **changes)
    assert dict(run.env_for("openai-api")) == {"TEAM_KEY": "team"}
    assert dict(run.env) == {"TEAM_KEY": "team"}
