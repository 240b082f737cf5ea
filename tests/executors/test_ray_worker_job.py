"""What a Ray worker opens its engine with (no Ray needed): the batch's store and the same
rate limits and retry budget as the driver, so a Ray batch is paced as a local one is."""

from __future__ import annotations

from pathlib import Path

from backstay.executors._stores import open_worker_engine
from backstay.executors.ray_worker import WorkerJob
from backstay.fallback.rules import FallbackRules
from backstay.idempotency.settings import GuardSettings
from backstay.policy.budget import BudgetSettings
from backstay.policy.ratelimit import RateLimitSettings


def test_a_worker_engine_paces_and_budgets_as_the_driver_s(tmp_path: Path) -> None:
    limits = {"anthropic": RateLimitSettings(requests_per_minute=600)}
    job = WorkerJob(
        store=str(tmp_path),
        state_dir=str(tmp_path),
        guard_settings=GuardSettings(),
        breaker=None,
        fallback_rules=FallbackRules(),
        rate_limits=limits,
        retry_budget=BudgetSettings(),
    )
    with open_worker_engine(job) as engine:
        assert engine.pacing is not None
        assert engine.pacing.keys == frozenset(limits)
        assert engine.pacing.budget is not None
        assert (engine.rate_limits, engine.retry_budget) == (limits, BudgetSettings())


def test_a_worker_engine_without_limits_is_not_paced(tmp_path: Path) -> None:
    job = WorkerJob(
        store=str(tmp_path),
        state_dir=str(tmp_path),
        guard_settings=GuardSettings(),
        breaker=None,
        fallback_rules=FallbackRules(),
    )
    with open_worker_engine(job) as engine:
        assert engine.pacing is None
