"""``GeminiCliAdapter`` without running Gemini CLI: settings, the command line, the run's
HOME and environment, and reading its stream and session transcript (real runs:
test_gemini_cli_cli.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.adapters.support import CANARY_KEY

from backstay.adapters.capture import Capture
from backstay.adapters.cli.gemini_cli import GeminiCliAdapter, run_settings
from backstay.adapters.cli.gemini_cli.settings import GeminiCliSettings, parse_settings
from backstay.adapters.cli.gemini_cli.stream import GeminiStream, result_usage, session_usage
from backstay.adapters.contract import AgentRequest, TierConfig
from backstay.adapters.usage import Usage
from backstay.agents import CLIS, Located, Source
from backstay.errors import ConfigError

CLI = Located(
    spec=CLIS["gemini-cli"], path=Path("/opt/gemini"), version="0.61.0", source=Source.PATH
)


def _request(tmp_path: Path, **changes: Any) -> AgentRequest:
    fields: dict[str, Any] = {
        "model": "gemini-2.5-flash",
        "workspace": tmp_path,
        "output_dir": tmp_path / "out",
        "timeout_s": 30.0,
        "prompt": "Fix the test.",
        "env": {"PATH": "/bin", "GEMINI_API_KEY": CANARY_KEY, "OPENAI_API_KEY": "other"},
    }
    return AgentRequest(**(fields | changes))


def test_the_command_line_is_headless_with_a_json_stream_and_no_prompts(tmp_path: Path) -> None:
    argv = GeminiCliAdapter().command(
        _request(tmp_path, prompt="-h"), GeminiCliSettings(), CLI.path
    )
    # The prompt reaches the CLI on stdin, never on the command line.
    assert argv == [
        "/opt/gemini",
        "--output-format",
        "stream-json",
        "--model",
        "gemini-2.5-flash",
        "--approval-mode",
        "yolo",
    ]


def test_the_run_settings_turn_off_retries_telemetry_and_updates(tmp_path: Path) -> None:
    request = _request(tmp_path)
    assert run_settings(request, parse_settings({})) == {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": 1},
    }


def test_the_tier_max_turns_and_retries_go_into_the_settings(tmp_path: Path) -> None:
    tier = TierConfig(tier_id="T1", allowed_tools=("read_file", "write_file"))
    written = run_settings(
        _request(tmp_path, tier=tier), parse_settings({"max_turns": 7, "cli_retries": 2})
    )
    assert written["general"]["maxAttempts"] == 3
    assert written["model"] == {"maxSessionTurns": 7}
    assert written["tools"] == {"core": ["read_file", "write_file"]}
    off = run_settings(
        _request(tmp_path, tier=TierConfig(tier_id="T0", tools_enabled=False)), parse_settings({})
    )
    assert off["tools"] == {"core": []}


@pytest.mark.parametrize("mode", ["append", "replace"])
def test_the_system_prompt_goes_into_the_run_home(tmp_path: Path, mode: str) -> None:
    request = _request(tmp_path, tier=TierConfig(tier_id="T1", system_prompt="Be brief."))
    home = tmp_path / "home"
    env = GeminiCliAdapter().write_home(request, parse_settings({"system_prompt_mode": mode}), home)
    settings = json.loads((home / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    if mode == "append":
        assert (home / ".gemini" / "GEMINI.md").read_text() == "Be brief."
        assert "GEMINI_SYSTEM_MD" not in env
    else:
        assert Path(env["GEMINI_SYSTEM_MD"]).read_text() == "Be brief."
        assert not (home / ".gemini" / "GEMINI.md").exists()


def test_the_environment_holds_only_what_the_run_needs(tmp_path: Path) -> None:
    request = _request(tmp_path, config={"base_url": "http://127.0.0.1:9"})
    settings = parse_settings(request.config)
    home = tmp_path / "home"
    adapter = GeminiCliAdapter()
    env = adapter.environment(request, settings, CLI, adapter.write_home(request, settings, home))
    assert env == {
        "PATH": "/bin",
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_COLOR": "1",
        "GEMINI_API_KEY": CANARY_KEY,
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",
    }


@pytest.mark.parametrize(
    ("config", "where"),
    [
        ({"base_url": "ftp://x"}, "config.base_url"),
        ({"max_turns": 1.5}, "config.max_turns"),
        ({"cli_retries": 11}, "config.cli_retries"),
        ({"system_prompt_mode": 1}, "config.system_prompt_mode"),
        ({"api_timeout_s": 3}, "config.api_timeout_s"),
    ],
)
def test_bad_settings_name_the_key(config: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigError) as info:
        GeminiCliAdapter().validate_config(config)
    assert info.value.where == where


def test_a_configured_binary_that_is_missing_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        GeminiCliAdapter().validate_config({"binary": str(tmp_path / "gemini")})
    assert info.value.where == "config.binary"
    assert "backstay agents install gemini-cli" in str(info.value)


EVENTS = [
    {"type": "init", "session_id": "s1", "model": "gemini-2.5-flash"},
    {"type": "message", "role": "user", "content": "Fix the test."},
    {"type": "message", "role": "assistant", "content": "Let me ", "delta": True},
    {"type": "message", "role": "assistant", "content": "look.", "delta": True},
    {"type": "tool_use", "tool_name": "read_file", "parameters": {"file_path": "a.py"}},
    {"type": "tool_result", "status": "error", "error": {"message": "no such file"}},
    {"type": "error", "severity": "warning", "message": "Loop detected"},
    {"type": "message", "role": "assistant", "content": "Done.", "delta": True},
    {
        "type": "result",
        "status": "success",
        "stats": {"input_tokens": 50, "output_tokens": 7, "cached": 20},
    },
]


def test_the_stream_tells_the_story_in_agent_log_and_keeps_the_result(tmp_path: Path) -> None:
    with Capture(tmp_path) as capture:
        stream = GeminiStream(capture)
        for event in EVENTS:
            stream.line(json.dumps(event))
        stream.line("[STARTUP] noise")
        stream.flush()
    lines = [line.partition(" ")[2] for line in (tmp_path / "agent.log").read_text().splitlines()]
    assert lines == [
        "gemini-cli session s1 started: model gemini-2.5-flash",
        "assistant: Let me look.",
        'tool call read_file: {"file_path": "a.py"}',
        'tool result (error): {"message": "no such file"}',
        "gemini-cli warning: Loop detected",
        "assistant: Done.",
        "gemini-cli result: success",
    ]
    assert stream.answer == "Let me look.Done."
    assert stream.result == EVENTS[-1]
    assert result_usage(EVENTS[-1]) == Usage(input_tokens=30, output_tokens=7, cache_read_tokens=20)


def _message(ident: str, **tokens: int) -> dict[str, Any]:
    return {"id": ident, "type": "gemini", "content": "", "tokens": tokens}


def test_the_session_transcript_gives_tokens_and_model_calls(tmp_path: Path) -> None:
    chats = tmp_path / ".gemini" / "tmp" / "work" / "chats"
    chats.mkdir(parents=True)
    records = [
        {"sessionId": "s1", "kind": "main"},
        {"$set": {"messages": [{"id": "u0", "type": "user", "content": [{"text": "hi"}]}]}},
        _message("a", input=100, output=1, cached=0),
        _message("a", input=100, output=10, cached=40, thoughts=5),  # its final version
        {"id": "u1", "type": "user", "content": [{"functionResponse": {}}]},
        {"$set": {"messages": [_message("b", input=120, output=3, cached=0)]}},
        "not an object",
    ]
    lines = [json.dumps(r) for r in records] + ["{broken"]
    (chats / "session-2026-11-22T02-27-s1.jsonl").write_text("\n".join(lines) + "\n")
    assert session_usage(tmp_path) == Usage(
        input_tokens=180, output_tokens=18, cache_read_tokens=40, api_calls=2
    )


def test_no_session_transcript_is_no_usage(tmp_path: Path) -> None:
    assert session_usage(tmp_path) is None
