"""``backstay run`` applies the configuration's ``frameworks.<adapter>`` section, as
``backstay batch`` does: a framework adapter run against the fake provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from backstay.cli import app
from backstay.cli._errors import USAGE_ERROR
from backstay.fakeprovider import FakeProvider, Reply, Scenario, ToolCall

WRITE = ToolCall(name="write_file", arguments={"path": "note.txt", "content": "hi"})


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("BACKSTAY_CONFIG", "MODEL", "TIER", "RUN_NUMBER", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


def _run(tmp_path: Path, base_url: str, config: str) -> Result:
    (tmp_path / "prompt.md").write_text("Save a note saying hi.", encoding="utf-8")
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "backstay.yaml").write_text(config, encoding="utf-8")
    args: list[Any] = [
        "run",
        "--adapter",
        "langgraph",
        "--model",
        "gpt-5",
        "--prompt-file",
        "prompt.md",
        "--workspace",
        "ws",
        "--output-dir",
        "out",
        "--timeout",
        "60",
        "--no-retry",
        "--adapter-option",
        f"options={{base_url: '{base_url}'}}",
    ]
    return CliRunner().invoke(app, args)


def test_the_framework_section_gives_the_run_its_tool_allowlist(tmp_path: Path) -> None:
    config = "frameworks:\n  langgraph:\n    safety: {allowed_tools: [write_file]}\n"
    with FakeProvider(Scenario(reply=Reply(tool_call=WRITE, text="Saved."))) as fake:
        result = _run(tmp_path, fake.url + "/v1", config)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "ws" / "note.txt").read_text() == "hi"


def test_the_framework_sections_approvals_hold_the_call(tmp_path: Path) -> None:
    config = (
        "frameworks:\n  langgraph:\n    safety: {allowed_tools: [write_file]}\n"
        "    human_in_the_loop: {approval_tools: [write_file]}\n"
    )
    with FakeProvider(Scenario(reply=Reply(tool_call=WRITE, text="Saved."))) as fake:
        result = _run(tmp_path, fake.url + "/v1", config)
    assert result.exit_code != 0
    assert "ERR_APPROVAL_REQUIRED" in result.output
    assert not (tmp_path / "ws" / "note.txt").exists()


def test_a_run_of_a_disabled_framework_exits_2(tmp_path: Path) -> None:
    result = _run(tmp_path, "http://127.0.0.1:9/v1", "frameworks:\n  langgraph: {enabled: false}\n")
    assert result.exit_code == USAGE_ERROR
    assert "--adapter is 'langgraph', which backstay.yaml disables" in result.output
    assert not (tmp_path / "out").exists()
