"""The aider adapter's settings, command line and environment, without running Aider: a
stand-in installation (a program printing Aider's version, and the price list a run's
HOME is seeded with) is enough."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from backstay.adapters.cli.aider import AiderAdapter
from backstay.adapters.cli.aider.command import AiderFiles, command, environment, prepare
from backstay.adapters.cli.aider.settings import MAX_INTERNAL_RETRIES, parse_settings
from backstay.adapters.contract import AgentRequest, TierConfig
from backstay.adapters.registry import get_adapter
from backstay.agents import AGENTS_DIR_ENV_VAR, Located, locate
from backstay.errors import ConfigError

PRICES = "model_prices_and_context_window"


def stand_in(root: Path, version: str = "0.86.2") -> Path:
    """An Aider installation that only knows its version: ``venv/bin/aider``."""
    binary = root / "venv" / "bin" / "aider"
    binary.parent.mkdir(parents=True)
    binary.write_text(f"#!/bin/sh\necho aider {version}\n")
    binary.chmod(0o755)
    litellm = root / "venv" / "lib" / "python3.11" / "site-packages" / "litellm"
    litellm.mkdir(parents=True)
    (litellm / f"{PRICES}_backup.json").write_text('{"seeded": true}')
    return binary


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    return stand_in(tmp_path / "install")


@pytest.fixture
def located(binary: Path) -> Located:
    return locate("aider", binary)


def request(tmp_path: Path, **changes: Any) -> AgentRequest:
    fields: dict[str, Any] = {
        "model": "openai/fake-model",
        "workspace": tmp_path,
        "output_dir": tmp_path / "out",
        "timeout_s": 30.0,
        "prompt": "make hello.txt",
    }
    return AgentRequest(**(fields | changes))


def files_for(tmp_path: Path) -> AiderFiles:
    root = tmp_path / "private"
    root.mkdir()
    return AiderFiles(root)


def test_the_registry_gives_the_aider_adapter() -> None:
    assert isinstance(get_adapter("aider"), AiderAdapter)


def test_every_documented_setting_is_accepted(binary: Path) -> None:
    AiderAdapter().validate_config(
        {
            "binary": str(binary),
            "base_url": "http://127.0.0.1:9/v1",
            "timeout_s": 30.5,
            "stream": True,
            "edit_format": "diff",
            "internal_retries": MAX_INTERNAL_RETRIES,
            "git": True,
            "auto_commits": True,
            "prices": {"openai/fake-model": {"input_per_mtok": 1, "output_per_mtok": 2}},
            "extra_args": ["--map-tokens", "0"],
        }
    )


@pytest.mark.parametrize(
    ("config", "where", "says"),
    [
        ({"colour": True}, "config.colour", "unknown setting"),
        ({"base_url": "127.0.0.1:9"}, "config.base_url", "http(s) URL"),
        ({"stream": "yes"}, "config.stream", "true or false"),
        ({"timeout_s": 0}, "config.timeout_s", "seconds above 0"),
        ({"timeout_s": "60"}, "config.timeout_s", "seconds above 0"),
        ({"timeout_s": float("inf")}, "config.timeout_s", "seconds above 0"),
        ({"edit_format": "ask"}, "config.edit_format", "must be one of"),
        ({"internal_retries": 9}, "config.internal_retries", "0 to 8"),
        ({"internal_retries": True}, "config.internal_retries", "0 to 8"),
        ({"auto_commits": True}, "config.auto_commits", "needs git"),
        ({"extra_args": "--map-tokens 0"}, "config.extra_args", "list of strings"),
        ({"extra_args": ["--map-tokens", ""]}, "config.extra_args[1]", "non-empty"),
        ({"extra_args": ["--model=gpt-5"]}, "config.extra_args[0]", "set by the adapter"),
        ({"prices": {"m": {"input_per_mtok": 1}}}, "config.prices.m.output_per_mtok", "required"),
        ({"binary": ""}, "config.binary", "path of the aider program"),
    ],
)
def test_a_wrong_setting_is_named_with_where_it_is(
    config: dict[str, Any], where: str, says: str, binary: Path
) -> None:
    with pytest.raises(ConfigError) as caught:
        AiderAdapter().validate_config({"binary": str(binary), **config})
    assert caught.value.where == where
    assert says in str(caught.value)


def test_a_binary_that_is_not_aider_at_a_known_version_is_refused(tmp_path: Path) -> None:
    old = stand_in(tmp_path / "old", version="0.50.0")
    with pytest.raises(ConfigError) as caught:
        AiderAdapter().validate_config({"binary": str(old)})
    assert caught.value.where == "config.binary"
    assert "aider 0.50.0, which backstay does not support" in str(caught.value)
    assert "backstay agents install aider" in str(caught.value)


def test_no_aider_installed_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(AGENTS_DIR_ENV_VAR, str(tmp_path / "agents"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(ConfigError) as caught:
        AiderAdapter().validate_config({})
    assert "Install it with `backstay agents install aider`" in str(caught.value)


def test_a_launcher_must_be_a_command_prefix() -> None:
    with pytest.raises(ConfigError) as caught:
        AiderAdapter(launcher="nsenter -t 1")
    assert caught.value.where == "launcher"


def test_the_command_line_is_non_interactive_and_keeps_the_workspace_clean(
    tmp_path: Path, located: Located
) -> None:
    files = files_for(tmp_path)
    argv = command(located.path, files, request(tmp_path), parse_settings({}))
    assert argv[:3] == [str(located.path), "--model", "openai/fake-model"]
    for flag in (
        "--yes-always",
        "--no-git",
        "--no-auto-commits",
        "--no-auto-lint",
        "--no-auto-test",
        "--no-check-update",
        "--analytics-disable",
        "--no-stream",
        "--no-suggest-shell-commands",
    ):
        assert flag in argv
    for flag, path in (
        ("--message-file", files.message),
        ("--analytics-log", files.analytics),
        ("--llm-history-file", files.llm_history),
        ("--chat-history-file", files.chat_history),
        ("--input-history-file", files.input_history),
        ("--model-settings-file", files.model_settings),
    ):
        assert argv[argv.index(flag) + 1] == str(path)
    assert "--openai-api-base" not in argv
    assert "--read" not in argv
    assert "make hello.txt" not in argv  # the prompt goes in a file, not on the command line


def test_settings_and_the_tier_map_onto_aider_flags(tmp_path: Path, located: Located) -> None:
    files = files_for(tmp_path)
    tier = TierConfig(tier_id="t1", system_prompt="Always write tests.")
    req = request(tmp_path, tier=tier)
    prepare(files, located, req, req.read_prompt())
    settings = parse_settings(
        {
            "base_url": "http://127.0.0.1:9/v1",
            "timeout_s": 90,
            "stream": True,
            "edit_format": "udiff",
            "git": True,
            "auto_commits": True,
            "extra_args": ["--map-tokens", "0"],
        }
    )
    argv = command(located.path, files, req, settings)
    assert argv[argv.index("--openai-api-base") + 1] == "http://127.0.0.1:9/v1"
    assert argv[argv.index("--edit-format") + 1] == "udiff"
    assert argv[argv.index("--timeout") + 1] == "90"
    assert argv[argv.index("--read") + 1] == str(files.conventions)
    assert files.conventions.read_text() == "Always write tests."
    assert {"--stream", "--auto-commits", "--no-gitignore"} <= set(argv)
    assert not {"--no-git", "--no-stream", "--no-auto-commits"} & set(argv)
    assert argv[-2:] == ["--map-tokens", "0"]


@pytest.mark.parametrize(
    "tier",
    [
        TierConfig(tier_id="no-tools", tools_enabled=False),
        TierConfig(tier_id="no-allowed-tools", allowed_tools=()),
    ],
)
def test_a_tier_without_tools_runs_aider_in_ask_mode(
    tmp_path: Path, located: Located, tier: TierConfig
) -> None:
    argv = command(
        located.path,
        files_for(tmp_path),
        request(tmp_path, tier=tier),
        parse_settings({"edit_format": "diff"}),
    )
    assert argv[argv.index("--chat-mode") + 1] == "ask"
    assert "--edit-format" not in argv


def test_the_base_url_may_come_from_the_request_environment(
    tmp_path: Path, located: Located
) -> None:
    req = request(tmp_path, env={"OPENAI_BASE_URL": "http://127.0.0.1:7/v1"})
    argv = command(located.path, files_for(tmp_path), req, parse_settings({}))
    assert argv[argv.index("--openai-api-base") + 1] == "http://127.0.0.1:7/v1"


def test_the_private_home_is_seeded_and_sdk_retries_are_off(
    tmp_path: Path, located: Located
) -> None:
    files = files_for(tmp_path)
    req = request(tmp_path)
    prepare(files, located, req, "make hello.txt")
    seeded = files.home / ".aider" / "caches" / f"{PRICES}.json"
    assert seeded.read_text() == '{"seeded": true}'
    assert files.message.read_text() == "make hello.txt"
    assert '"max_retries": 0' in files.model_settings.read_text()
    assert '"aider/extra_params"' in files.model_settings.read_text()


def test_the_environment_is_the_request_s_under_a_private_home(
    tmp_path: Path, located: Located
) -> None:
    files = files_for(tmp_path)
    req = request(
        tmp_path,
        env={
            "OPENAI_API_KEY": "sk-one",
            "AWS_REGION": "eu-west-1",
            "HOME": "/root",
            "XDG_CONFIG_HOME": "/root/.config",
        },
    )
    env = environment(files, located, req)
    assert env["OPENAI_API_KEY"] == "sk-one"
    assert env["AWS_REGION"] == "eu-west-1"
    assert env["HOME"] == str(files.home)
    assert env["TMPDIR"].startswith(str(files.home))
    assert env["XDG_CONFIG_HOME"].startswith(str(files.home))
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert Path(env["BROWSER"]).name == "true"
    assert (env["PATH"], env["LANG"]) == (os.defpath, "C.UTF-8")
    assert set(env) == set(req.env) | {
        "PATH",
        "LANG",
        "TMPDIR",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "PYTHONUNBUFFERED",
        "COLUMNS",
        "NO_COLOR",
        "BROWSER",
        "LITELLM_LOCAL_MODEL_COST_MAP",
    }
