"""``ClaudeCodeAdapter`` without running Claude Code: settings, the command line, the
environment, and reading the stream-json it prints (real runs: test_claude_code_cli.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.adapters.support import CANARY_KEY

from backstay.adapters.capture import Capture
from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.cli.claude_code.settings import parse_settings
from backstay.adapters.cli.claude_code.stream import ClaudeStream, one_line
from backstay.adapters.contract import AgentRequest, TierConfig
from backstay.agents import CLIS, Located, Source
from backstay.errors import ConfigError

CLI = Located(
    spec=CLIS["claude-code"], path=Path("/opt/claude"), version="2.1.197", source=Source.PATH
)


def _request(tmp_path: Path, **changes: Any) -> AgentRequest:
    fields: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "workspace": tmp_path,
        "output_dir": tmp_path / "out",
        "timeout_s": 30.0,
        "prompt": "Fix the test.",
        "env": {"PATH": "/bin", "ANTHROPIC_API_KEY": CANARY_KEY, "HOME": "/root", "SECRET": "x"},
    }
    return AgentRequest(**(fields | changes))


def _command(tmp_path: Path, **changes: Any) -> list[str]:
    request = _request(tmp_path, **changes)
    return ClaudeCodeAdapter().command(request, parse_settings(request.config), CLI.path)


def test_the_command_line_is_headless_with_a_json_stream_and_no_prompts(tmp_path: Path) -> None:
    assert _command(tmp_path) == [
        "/opt/claude",
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--model",
        "claude-sonnet-4-5",
        "--permission-mode",
        "bypassPermissions",
        "--no-session-persistence",
    ]


def test_the_prompt_is_not_on_the_command_line(tmp_path: Path) -> None:
    assert not any("Fix the test" in arg for arg in _command(tmp_path))


def test_the_tier_and_max_turns_become_flags(tmp_path: Path) -> None:
    tier = TierConfig(tier_id="T1", system_prompt="Be brief.", allowed_tools=("Read", "Edit"))
    argv = _command(tmp_path, tier=tier, config={"max_turns": 5})
    flags = argv[argv.index("--no-session-persistence") + 1 :]
    assert flags == [
        "--max-turns",
        "5",
        "--append-system-prompt",
        "Be brief.",
        "--tools",
        "Read,Edit",
        "--disallowedTools",
        "Task",
    ]


def test_a_replaced_system_prompt_and_no_tools(tmp_path: Path) -> None:
    tier = TierConfig(
        tier_id="T0", system_prompt="Only answer.", tools_enabled=False, delegation_enabled=True
    )
    argv = _command(tmp_path, tier=tier, config={"system_prompt_mode": "replace"})
    assert argv[argv.index("--no-session-persistence") + 1 :] == [
        "--system-prompt",
        "Only answer.",
        "--tools",
        "",
    ]


def test_the_environment_holds_only_what_the_run_needs(tmp_path: Path) -> None:
    request = _request(tmp_path, config={"base_url": "http://127.0.0.1:9", "pass_env": ["SECRET"]})
    home = tmp_path / "home"
    env = ClaudeCodeAdapter().environment(request, parse_settings(request.config), CLI, home)
    assert env["HOME"] == str(home) != request.env["HOME"]
    assert env["CLAUDE_CONFIG_DIR"] == str(home / ".claude")
    assert env["TMPDIR"] == str(home / "tmp")
    assert (home / "tmp").is_dir()
    assert env["ANTHROPIC_API_KEY"] == CANARY_KEY
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == "claude-sonnet-4-5"
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert env["DISABLE_AUTOUPDATER"] == "1"
    assert (env["PATH"], env["SECRET"]) == ("/bin", "x")
    assert env.get("IS_SANDBOX") == ("1" if os.geteuid() == 0 else None)
    assert "CLAUDECODE" not in env


def test_no_base_url_means_no_pinned_models(tmp_path: Path) -> None:
    request = _request(tmp_path, env={"ANTHROPIC_API_KEY": CANARY_KEY}, config={"cli_retries": 2})
    env = ClaudeCodeAdapter().environment(
        request, parse_settings(request.config), CLI, tmp_path / "h"
    )
    assert "ANTHROPIC_BASE_URL" not in env
    assert "ANTHROPIC_DEFAULT_HAIKU_MODEL" not in env
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "2"
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"


@pytest.mark.parametrize(
    ("config", "where"),
    [
        ({"base_url": "127.0.0.1:9"}, "config.base_url"),
        ({"max_turns": 0}, "config.max_turns"),
        ({"cli_retries": -1}, "config.cli_retries"),
        ({"system_prompt_mode": "prepend"}, "config.system_prompt_mode"),
        ({"pass_env": "SECRET"}, "config.pass_env"),
        ({"pass_env": ["A B"]}, "config.pass_env[0]"),
        ({"launcher": "nice"}, "config.launcher"),
        ({"api_timeout_s": 0}, "config.api_timeout_s"),
        ({"prices": {"m": {"input_per_mtok": 1}}}, "config.prices.m.output_per_mtok"),
        ({"binary": ""}, "config.binary"),
        ({"colour": "red"}, "config.colour"),
    ],
)
def test_bad_settings_name_the_key(config: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigError) as info:
        ClaudeCodeAdapter().validate_config(config)
    assert info.value.where == where


def test_a_configured_binary_that_is_missing_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        ClaudeCodeAdapter().validate_config({"binary": str(tmp_path / "claude")})
    assert info.value.where == "config.binary"
    assert "backstay agents install claude-code" in str(info.value)


def test_a_configured_binary_of_another_version_is_refused(tmp_path: Path) -> None:
    binary = tmp_path / "claude"
    binary.write_text("#!/bin/sh\necho '1.0.0 (Claude Code)'\n")
    binary.chmod(0o755)
    with pytest.raises(ConfigError) as info:
        ClaudeCodeAdapter().validate_config({"binary": str(binary)})
    assert "1.0.0" in str(info.value)
    assert "supported: 2.1.197" in str(info.value)


EVENTS = [
    {"type": "system", "subtype": "init", "session_id": "s1", "model": "m", "tools": ["Bash"]},
    {"type": "stream_event", "event": {"type": "content_block_delta"}},
    {
        "type": "assistant",
        "message": {
            "content": [
                {"type": "text", "text": "Let me look.\nFirst line."},
                {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}},
            ]
        },
    },
    {
        "type": "user",
        "message": {"content": [{"type": "tool_result", "content": "a.py", "is_error": True}]},
    },
    {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 2, "error_status": 529},
    {"type": "result", "subtype": "success", "is_error": False, "num_turns": 2, "result": "ok"},
]


def test_the_stream_tells_the_story_in_agent_log_and_keeps_the_result(tmp_path: Path) -> None:
    with Capture(tmp_path) as capture:
        stream = ClaudeStream(capture)
        for event in EVENTS:
            stream.line(json.dumps(event))
        stream.line("not json")
    log = (tmp_path / "agent.log").read_text()
    lines = [line.partition(" ")[2] for line in log.splitlines()]
    assert lines == [
        "claude-code session s1 started: model m, 1 tools, permission mode None",
        "assistant: Let me look. First line.",
        'tool call Bash: {"command": "ls"}',
        "tool result (error): a.py",
        "claude-code retried by itself: attempt 1 of 2 after status 529 (None), waiting None ms",
        "claude-code result: success, is_error False, 2 turns, api_error_status None, "
        "terminal_reason None",
    ]
    assert stream.result == EVENTS[-1]
    assert stream.retries == 1


def test_one_line_folds_and_cuts() -> None:
    assert one_line("a\n  b") == "a b"
    assert one_line("x" * 10, limit=4) == "xxx…"
    assert one_line({"k": 1}) == '{"k": 1}'
