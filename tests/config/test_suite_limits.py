"""A task's ``limits`` in a suite: checked against what its adapter can enforce."""

from __future__ import annotations

from pathlib import Path

from tests.config.suite_helpers import load, problems


def test_a_limit_the_adapter_enforces_is_kept(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        """
        suite: s
        tasks:
          - {id: t, adapter: claude-code, model: m, prompt: hi, limits: {max_turns: 5}}
        """,
    )
    assert dict(suite.tasks[0].limits) == {"max_turns": 5}


def test_a_limit_the_adapter_cannot_enforce_is_refused_at_its_line(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        suite: s
        tasks:
          - id: t
            adapter: codex
            model: m
            prompt: hi
            limits: {max_turns: 5}
        """,
    )
    assert found == ["8: tasks[0].limits.max_turns: adapter 'codex' cannot enforce this limit"]


def test_a_wrong_limit_value_is_named(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        suite: s
        tasks:
          - {id: t, adapter: anthropic-api, model: m, prompt: hi, limits: {max_output_tokens: 0}}
        """,
    )
    assert len(found) == 1
    assert "tasks[0].limits.max_output_tokens: must be >= 1" in found[0]
