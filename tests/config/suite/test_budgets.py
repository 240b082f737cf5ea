"""Spending budgets in a suite file: the batch's, each tenant's, and each run's."""

from __future__ import annotations

from pathlib import Path

from tests.config.suite_helpers import load, one_task, problems

from backstay.policy.spend import SpendBudget


def test_the_top_level_budget_is_the_batchs(tmp_path: Path) -> None:
    suite = load(tmp_path, one_task() + "budget: {usd: 0.05, tokens: 20000}\n")
    assert suite.budget == SpendBudget(usd=0.05, tokens=20000)


def test_a_suite_without_a_budget_has_none(tmp_path: Path) -> None:
    suite = load(tmp_path, one_task())
    assert suite.budget is None
    assert dict(suite.tenants) == {}
    assert suite.tasks[0].budget is None


def test_each_tenant_has_its_budget(tmp_path: Path) -> None:
    text = one_task("prompt: hi\ntenant: acme") + "tenants:\n  acme: {budget: {usd: 1}}\n"
    suite = load(tmp_path, text)
    assert dict(suite.tenants) == {"acme": SpendBudget(usd=1.0)}
    assert suite.tasks[0].tenant == "acme"


def test_a_task_takes_its_budget_and_tenant_from_defaults(tmp_path: Path) -> None:
    defaults = "{adapter: mock, model: m, tenant: globex, budget: {tokens: 500}}"
    (task,) = load(tmp_path, one_task(defaults=defaults)).tasks
    assert (task.tenant, task.budget) == ("globex", SpendBudget(tokens=500))


def test_a_tasks_own_budget_replaces_the_default(tmp_path: Path) -> None:
    text = one_task(
        "prompt: hi\nbudget: {usd: 0.5}",
        defaults="{adapter: mock, model: m, budget: {tokens: 500}}",
    )
    (task,) = load(tmp_path, text).tasks
    assert task.budget == SpendBudget(usd=0.5)


def test_wrong_budgets_are_each_named_with_their_line_and_key(tmp_path: Path) -> None:
    text = (
        one_task("prompt: hi\nbudget: {usd: -1, dollars: 2}")
        + "budget: {}\ntenants:\n  acme: {budget: {tokens: 1.5}}\n  'no good': {budget: {usd: 1}}\n"
    )
    found = problems(tmp_path, text)
    assert found == [
        "8: tasks[0].budget.usd: must be >= 0, got -1",
        "8: tasks[0].budget.dollars: unknown key; known: usd, tokens",
        "9: budget: give usd and/or tokens",
        "11: tenants.acme.budget.tokens: must be a whole number, got 1.5",
        '12: tenants."no good": a tenant name must be a letter or digit, then letters, digits, '
        "'_', '.' or '-'",
    ]


def test_a_tenant_without_a_budget_is_a_problem(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task() + "tenants:\n  acme: {}\n")
    assert found == ["9: tenants.acme.budget: is required: the tenant's budget (usd, tokens)"]
