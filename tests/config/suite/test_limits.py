"""A task's ``limits`` in a suite: checked against what its adapter can enforce."""

from __future__ import annotations

from pathlib import Path

from tests.config.suite_helpers import load, problems

from backstay.policy.spend import SpendBudget


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


def test_a_task_takes_limits_fallbacks_and_a_budget_together(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        """
        suite: s
        tasks:
          - id: t
            adapter: anthropic-api
            model: m
            prompt: hi
            tenant: acme
            limits: {max_output_tokens: 40}
            budget: {usd: 0.5, tokens: 9000}
            context_window: 200000
            fallbacks:
              - {adapter: openai-api, model: spare, api_key_env: SPARE_KEY}
              - {adapter: anthropic-api, model: other}
        tenants:
          acme: {budget: {usd: 2}}
        """,
    )
    (task,) = suite.tasks
    assert dict(task.limits) == {"max_output_tokens": 40}
    assert task.budget == SpendBudget(usd=0.5, tokens=9000)
    assert [(c.adapter, c.model) for c in task.fallbacks] == [
        ("openai-api", "spare"),
        ("anthropic-api", "other"),
    ]
    assert (task.tenant, task.context_window) == ("acme", 200_000)


def test_a_limit_a_fallback_adapter_cannot_enforce_is_refused(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        suite: s
        tasks:
          - id: t
            adapter: claude-code
            model: m
            prompt: hi
            limits: {max_turns: 5}
            fallbacks: [{adapter: codex, model: spare}]
        """,
    )
    assert found == [
        "8: tasks[0].limits.max_turns: fallback adapter 'codex' cannot enforce this limit"
    ]


def test_a_fallback_from_defaults_is_checked_against_the_tasks_limits(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        suite: s
        defaults:
          fallbacks: [{adapter: aider, model: spare}]
        tasks:
          - {id: t, adapter: opencode, model: m, prompt: hi, limits: {max_turns: 5}}
        """,
    )
    assert found == [
        "6: tasks[0].limits.max_turns: fallback adapter 'aider' cannot enforce this limit"
    ]
