"""The real Claude Code, Codex and Gemini CLI each run a scripted four-turn session through
their adapters, inside a private network namespace, against the fake provider started
there: every turn is a call of the CLI's own shell tool appending a line to a workspace
file, so the file ends with each line once and the provider saw each turn once.

Skipped, with the reason, when a CLI is not installed (``make agents``) or no namespace
can be made here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from tests.adapters.cli_provider import BASE_ENV, Providers, installed, namespace_providers
from tests.adapters.support import CANARY_KEY

from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.cli.codex import CodexAdapter
from backstay.adapters.cli.gemini_cli import GeminiCliAdapter

TURNS: Final = 4
TIMEOUT_S: Final = 150.0
FINAL: Final = "All four steps are done."
# The scenario file form of Scenario.shell_session(TURNS, final=FINAL).
SESSION: Final = {
    "session": {
        "turns": [{"shell": f"echo step-{i} >> progress.txt"} for i in range(1, TURNS + 1)],
        "final": FINAL,
    }
}


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


def _run(
    adapter: ClaudeCodeAdapter | CodexAdapter | GeminiCliAdapter,
    model: str,
    *,
    config: dict[str, Any],
    key_env: dict[str, str],
    tmp_path: Path,
) -> tuple[Path, dict[str, Any], str]:
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Run the four steps, one command at a time.", encoding="utf-8")
    code = adapter.run(
        model, prompt, workspace, out, config, TIMEOUT_S, env={**BASE_ENV, **key_env}
    )
    log = (out / "agent.log").read_text()
    assert code == 0, log
    return workspace, json.loads((out / "metrics.json").read_text()), log


def _check(workspace: Path, stats: dict[str, Any], log: str) -> None:
    lines = (workspace / "progress.txt").read_text().splitlines()
    assert lines == [f"step-{i}" for i in range(1, TURNS + 1)], log
    # Each turn once, and the final answer (turn 5) once.
    assert stats["by_turn"] == {str(t): 1 for t in range(1, TURNS + 2)}, stats
    assert stats["by_fault"] == {}
    assert FINAL in log
    assert CANARY_KEY not in log


def test_claude_code_runs_a_scripted_four_turn_session_with_its_bash_tool(
    providers: Providers, tmp_path: Path
) -> None:
    installed("claude-code")
    served = providers.serve(SESSION)
    config = {"base_url": served.url, "launcher": providers.launcher}
    workspace, _metrics, log = _run(
        ClaudeCodeAdapter(),
        "claude-sonnet-4-5",
        config=config,
        key_env={"ANTHROPIC_API_KEY": CANARY_KEY},
        tmp_path=tmp_path,
    )
    _check(workspace, served.stats(), log)


def test_codex_runs_a_scripted_four_turn_session_with_its_exec_command_tool(
    providers: Providers, tmp_path: Path
) -> None:
    installed("codex")
    served = providers.serve(SESSION)
    workspace, _metrics, log = _run(
        CodexAdapter(launcher=tuple(providers.launcher)),
        "gpt-5.4",
        config={"base_url": f"{served.url}/v1"},
        key_env={"OPENAI_API_KEY": CANARY_KEY},
        tmp_path=tmp_path,
    )
    _check(workspace, served.stats(), log)


def test_gemini_cli_runs_a_scripted_four_turn_session_with_its_shell_tool(
    providers: Providers, tmp_path: Path
) -> None:
    installed("gemini-cli")
    served = providers.serve(SESSION)
    config = {"base_url": served.url, "launcher": providers.launcher}
    workspace, _metrics, log = _run(
        GeminiCliAdapter(),
        "gemini-2.5-flash",
        config=config,
        key_env={"GEMINI_API_KEY": CANARY_KEY},
        tmp_path=tmp_path,
    )
    _check(workspace, served.stats(), log)
