"""Policies in a suite file: a name from the registry, or an inline mapping."""

from __future__ import annotations

from pathlib import Path

from tests.config.suite_helpers import load, one_task, problems

from backstay.policy.builtin import AGENT_DISPATCH, NO_RETRY, STANDARD
from backstay.policy.registry import PolicyRegistry
from backstay.policy.retry import RetryPolicy
from backstay.taxonomy import FailureKind


def test_without_a_policy_a_run_uses_the_registry_policy_for_agents(tmp_path: Path) -> None:
    (task,) = load(tmp_path, one_task()).tasks
    assert task.policy is AGENT_DISPATCH


def test_the_policy_for_agents_comes_from_the_given_registry(tmp_path: Path) -> None:
    registry = PolicyRegistry(operation_policies={"agent": "no_retry"})
    (task,) = load(tmp_path, one_task(), registry=registry).tasks
    assert task.policy is NO_RETRY


def test_a_named_policy_is_looked_up(tmp_path: Path) -> None:
    (task,) = load(tmp_path, one_task("prompt: hi\npolicy: standard")).tasks
    assert task.policy is STANDARD


def test_a_named_policy_may_come_from_the_configuration(tmp_path: Path) -> None:
    fast = RetryPolicy(name="fast", max_attempts=2)
    registry = PolicyRegistry([fast])
    (task,) = load(tmp_path, one_task("prompt: hi\npolicy: fast"), registry=registry).tasks
    assert task.policy is fast


def test_an_unknown_policy_name_gets_a_suggestion(tmp_path: Path) -> None:
    assert problems(tmp_path, one_task("prompt: hi\npolicy: standrd")) == [
        "8: tasks[0].policy: unknown policy 'standrd' (did you mean 'standard'?); "
        "known: agent_dispatch, aggressive, error_contract, no_retry, standard"
    ]


def test_an_inline_policy_starts_from_the_policy_it_replaces(tmp_path: Path) -> None:
    (task,) = load(tmp_path, one_task("prompt: hi\npolicy: {max_attempts: 2}")).tasks
    assert task.policy == AGENT_DISPATCH.derive(name="s.t", max_attempts=2)


def test_an_inline_policy_starts_from_the_policy_it_extends(tmp_path: Path) -> None:
    body = "prompt: hi\npolicy: {extends: standard, max_delay_s: 1}"
    (task,) = load(tmp_path, one_task(body)).tasks
    assert task.policy == STANDARD.derive(name="s.t", max_delay_s=1.0)


def test_a_task_policy_starts_from_the_inline_default_policy(tmp_path: Path) -> None:
    text = one_task(
        "prompt: hi\npolicy: {seed: 7}",
        defaults="{adapter: mock, model: m, policy: {extends: no_retry, deadline_s: 9}}",
    )
    suite = load(tmp_path, text)
    assert suite.defaults.policy == NO_RETRY.derive(name="s.defaults", deadline_s=9.0)
    assert suite.tasks[0].policy == NO_RETRY.derive(name="s.t", deadline_s=9.0, seed=7)


def test_per_kind_settings_merge_with_the_inherited_ones(tmp_path: Path) -> None:
    body = "prompt: hi\npolicy: {extends: standard, per_kind: {rate_limit: {max_attempts: 9}}}"
    (task,) = load(tmp_path, one_task(body)).tasks
    rate_limit = task.policy.per_kind[FailureKind.RATE_LIMIT]
    assert (rate_limit.max_attempts, rate_limit.max_delay_s) == (9, 30.0)


def test_an_inline_policy_with_an_unknown_parent_is_a_problem(tmp_path: Path) -> None:
    assert problems(tmp_path, one_task("prompt: hi\npolicy: {extends: ghost}")) == [
        "8: tasks[0].policy.extends: unknown policy 'ghost'; "
        "known: agent_dispatch, aggressive, error_contract, no_retry, standard"
    ]


def test_an_inline_policy_key_is_checked(tmp_path: Path) -> None:
    assert problems(tmp_path, one_task("prompt: hi\npolicy: {max_attempts: 0}")) == [
        "8: tasks[0].policy.max_attempts: must be >= 1, got 0"
    ]


def test_an_unknown_inline_policy_key_gets_a_suggestion(tmp_path: Path) -> None:
    (found,) = problems(tmp_path, one_task("prompt: hi\npolicy: {max_atempts: 2}"))
    assert found.startswith(
        "8: tasks[0].policy.max_atempts: unknown key (did you mean 'max_attempts'?)"
    )


def test_a_rule_relating_two_policy_keys_names_the_key(tmp_path: Path) -> None:
    body = "prompt: hi\npolicy: {extends: standard, initial_delay_s: 10, max_delay_s: 1}"
    assert problems(tmp_path, one_task(body)) == [
        "8: tasks[0].policy.max_delay_s: must be >= initial_delay_s (10), got 1"
    ]


def test_a_policy_that_is_neither_a_name_nor_a_mapping_is_a_problem(tmp_path: Path) -> None:
    assert problems(tmp_path, one_task("prompt: hi\npolicy: [standard]")) == [
        "8: tasks[0].policy: must be a policy name or a mapping of policy settings, got a list"
    ]


def test_an_inline_policy_takes_no_name(tmp_path: Path) -> None:
    assert problems(tmp_path, one_task("prompt: hi\npolicy: {name: x}")) == [
        "8: tasks[0].policy.name: an inline policy is named after where it is given; remove this"
    ]
