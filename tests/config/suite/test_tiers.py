"""Tiers in a suite file: each a TierConfig, ids unique within the list."""

from __future__ import annotations

from pathlib import Path

from tests.config.suite_helpers import load, one_task, problems

from backstay.adapters.contract import TierConfig


def test_a_task_without_tiers_runs_in_tier_t0(tmp_path: Path) -> None:
    (task,) = load(tmp_path, one_task()).tasks
    assert task.tiers == (TierConfig(tier_id="T0"),)


def test_every_tier_key_reaches_the_tier_config(tmp_path: Path) -> None:
    body = """\
        prompt: hi
        tiers:
          - tier_id: T2
            tier_name: Tooled
            tier_prompt: Be brief.
            tools_enabled: true
            delegation_enabled: true
            allowed_tools: [Read, Edit]
        """
    (task,) = load(tmp_path, one_task(body)).tasks
    assert task.tiers == (
        TierConfig(
            tier_id="T2",
            tier_name="Tooled",
            system_prompt="Be brief.",
            tools_enabled=True,
            delegation_enabled=True,
            allowed_tools=("Read", "Edit"),
        ),
    )


def test_defaults_tiers_apply_to_every_task(tmp_path: Path) -> None:
    text = one_task(defaults="{adapter: mock, model: m, tiers: [{tier_id: A}, {tier_id: B}]}")
    (task,) = load(tmp_path, text).tasks
    assert [tier.tier_id for tier in task.tiers] == ["A", "B"]


def test_a_task_replaces_the_default_tiers_whole(tmp_path: Path) -> None:
    text = one_task(
        "prompt: hi\ntiers: [{tier_id: C}]",
        defaults="{adapter: mock, model: m, tiers: [{tier_id: A}, {tier_id: B}]}",
    )
    (task,) = load(tmp_path, text).tasks
    assert [tier.tier_id for tier in task.tiers] == ["C"]


def test_an_unknown_tier_key_gets_a_suggestion(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task("prompt: hi\ntiers: [{tier_id: T0, tier_nme: x}]"))
    assert found == [
        "8: tasks[0].tiers[0].tier_nme: unknown key (did you mean 'tier_name'?); known: "
        "tier_id, tier_name, tier_prompt, tools_enabled, delegation_enabled, allowed_tools"
    ]


def test_a_tier_id_given_twice_names_the_first(tmp_path: Path) -> None:
    body = "prompt: hi\ntiers:\n  - {tier_id: T0}\n  - {tier_id: T0}"
    found = problems(tmp_path, one_task(body))
    assert found == [
        "10: tasks[0].tiers[1].tier_id: tier 'T0' is given twice in this list (first on line 9)"
    ]


def test_a_tier_needs_an_id(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task("prompt: hi\ntiers: [{tier_name: x}]"))
    assert found == ["8: tasks[0].tiers[0].tier_id: is required, e.g. tier_id: T0"]


def test_an_empty_tier_list_is_a_problem(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task("prompt: hi\ntiers: []"))
    assert found == [
        "8: tasks[0].tiers: must hold at least one tier (leave it out for one tier, T0)"
    ]


def test_tiers_must_be_a_list(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task("prompt: hi\ntiers: {tier_id: T0}"))
    assert found == ["8: tasks[0].tiers: must be a list of tiers, got a mapping"]


def test_tools_enabled_must_be_a_boolean(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task("prompt: hi\ntiers: [{tier_id: T0, tools_enabled: 'no'}]"))
    assert found == ["8: tasks[0].tiers[0].tools_enabled: must be true or false, got 'no'"]


def test_allowed_tools_without_tools_is_a_problem_at_allowed_tools(tmp_path: Path) -> None:
    body = "prompt: hi\ntiers: [{tier_id: T0, tools_enabled: false, allowed_tools: [Read]}]"
    found = problems(tmp_path, one_task(body))
    assert found == ["8: tasks[0].tiers[0].allowed_tools: names tools while tools_enabled is false"]
