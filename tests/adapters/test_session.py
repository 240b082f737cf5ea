"""The session settings of a CLI task and the ``session.json`` an attempt leaves."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.session import (
    SESSION_FILE,
    SessionOptions,
    SessionRecord,
    parse_session_options,
    read_session_record,
    write_session_record,
)
from backstay.errors import ConfigError


def test_the_defaults_snapshot_and_resume() -> None:
    assert parse_session_options({}) == SessionOptions(
        workspace_snapshot=True, resume_session=True, snapshot_max_bytes=1 << 30
    )


@pytest.mark.parametrize(
    ("config", "where"),
    [
        ({"workspace_snapshot": "no"}, "config.workspace_snapshot"),
        ({"resume_session": 1}, "config.resume_session"),
        ({"snapshot_max_bytes": 0}, "config.snapshot_max_bytes"),
        ({"snapshot_max_bytes": 1.5}, "config.snapshot_max_bytes"),
        ({"continue_prompt": " "}, "config.continue_prompt"),
    ],
)
def test_a_bad_setting_is_named(config: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_session_options(config)
    assert caught.value.where == where


def test_a_cli_adapter_accepts_the_session_settings_and_checks_them() -> None:
    adapter = ClaudeCodeAdapter()
    with pytest.raises(ConfigError, match=r"config\.resume_session"):
        adapter.validate_config({"resume_session": "yes"})
    # Known to every CLI adapter's check; its own settings are checked as before.
    with pytest.raises(ConfigError, match=r"config\.nonsense"):
        adapter.validate_config({"workspace_snapshot": False, "nonsense": 1})


def test_a_session_record_is_written_privately_and_read_back(tmp_path: Path) -> None:
    record = SessionRecord(agent="codex", session_id="t-1", turns=3, resumed=True)
    write_session_record(tmp_path / "out", record)
    assert read_session_record(tmp_path / "out") == record
    assert stat.S_IMODE((tmp_path / "out" / SESSION_FILE).stat().st_mode) == 0o600


@pytest.mark.parametrize("text", ["", "{", '{"agent": "a", "session_id": 5}', '{"x": 1}'])
def test_an_unreadable_session_record_is_none(tmp_path: Path, text: str) -> None:
    (tmp_path / SESSION_FILE).write_text(text)
    assert read_session_record(tmp_path) is None
    assert read_session_record(tmp_path / "missing") is None
