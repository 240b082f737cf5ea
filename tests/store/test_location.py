"""Store locations: parsing, precedence (flag > env > config > state dir), the extra."""

from __future__ import annotations

from pathlib import Path

import pytest

from backstay.errors import ConfigError
from backstay.policy.budget import BudgetSettings, RetryBudget
from backstay.policy.ratelimit import RateLimiter, RateLimitSettings
from backstay.store import open as store_open
from backstay.store.location import (
    STORE_ENV_VAR,
    StoreKind,
    StoreLocation,
    StoreUnavailable,
    parse_store,
    resolve_store,
)
from backstay.store.open import open_stores


def test_a_path_is_a_sqlite_location(tmp_path: Path) -> None:
    found = parse_store(str(tmp_path))
    assert (found.kind, found.path, found.shared) == (StoreKind.SQLITE, tmp_path, False)


def test_a_redis_url_is_a_shared_location_with_the_default_namespace() -> None:
    found = parse_store("redis://127.0.0.1:6379/0")
    assert (found.kind, found.namespace, found.shared) == (StoreKind.REDIS, "backstay", True)


def test_a_tls_url_with_a_namespace_is_a_redis_location() -> None:
    found = parse_store("rediss://example.test:6380/2?namespace=nightly")
    assert (found.kind, found.namespace) == (StoreKind.REDIS, "nightly")


def test_a_url_with_cluster_yes_names_a_node_of_a_redis_cluster() -> None:
    found = parse_store("redis://127.0.0.1:7000/0?namespace=n&cluster=yes")
    assert (found.kind, found.namespace, found.cluster) == (StoreKind.REDIS, "n", True)
    assert parse_store("redis://127.0.0.1:7000/0").cluster is False


def test_an_unknown_scheme_is_a_config_error_naming_the_flag() -> None:
    with pytest.raises(ConfigError, match="unknown store scheme 'postgres'") as err:
        parse_store("postgres://db/1")
    assert err.value.where == "--store"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("redis://:6379/0", "names no host"),
        ("redis://h:port/0", "port"),
        ("redis://h:6379/zero", "database must be a number"),
        ("redis://h:6379/0?prefix=x", "unknown store URL parameter 'prefix'"),
        ("redis://h:6379/0?namespace=a{b}", "namespace must be"),
        ("redis://h:6379/0?cluster=maybe", "cluster must be yes or no"),
        ("redis://h:6379/3?cluster=yes", "database 0 only"),
    ],
)
def test_a_malformed_redis_url_is_a_config_error(url: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        parse_store(url)


def test_the_display_form_hides_the_password() -> None:
    found = parse_store("redis://user:s3cret-canary@h:6379/0")
    assert "s3cret-canary" not in found.display
    assert found.display == "redis://user:***@h:6379/0"


def test_the_flag_wins_over_the_environment_and_the_config(tmp_path: Path) -> None:
    env = {STORE_ENV_VAR: "redis://env:1/0"}
    found = resolve_store(
        "redis://flag:1/0", state_dir=tmp_path, config="redis://cfg:1/0", environ=env
    )
    assert found.url == "redis://flag:1/0"


def test_the_environment_wins_over_the_config(tmp_path: Path) -> None:
    env = {STORE_ENV_VAR: "redis://env:1/0"}
    found = resolve_store(None, state_dir=tmp_path, config="redis://cfg:1/0", environ=env)
    assert found.url == "redis://env:1/0"


def test_the_config_wins_over_the_state_directory(tmp_path: Path) -> None:
    found = resolve_store(None, state_dir=tmp_path, config="redis://cfg:1/0", environ={})
    assert found.url == "redis://cfg:1/0"


def test_sqlite_in_the_state_directory_is_the_default(tmp_path: Path) -> None:
    found = resolve_store(None, state_dir=tmp_path, environ={})
    assert (found.kind, found.path) == (StoreKind.SQLITE, tmp_path)


def test_an_unknown_unavailable_mode_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="stop or wait"):
        resolve_store(None, state_dir=tmp_path, environ={}, unavailable="retry")


def test_wait_is_kept_as_the_unavailable_mode() -> None:
    found = parse_store("redis://h:1/0", unavailable="wait")
    assert found.unavailable is StoreUnavailable.WAIT


def test_the_sqlite_bundle_opens_every_store_in_the_state_file(tmp_path: Path) -> None:
    bundle = open_stores(parse_store(str(tmp_path)), state_dir=tmp_path)
    try:
        assert not bundle.has_batch()
        assert (tmp_path / "state.sqlite").is_file()
    finally:
        bundle.close()


def test_a_redis_location_without_the_extra_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_open.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=r"pip install 'backstay\[redis\]'"):
        open_stores(parse_store("redis://127.0.0.1:1/0"), state_dir=tmp_path)


@pytest.mark.parametrize("text", ["redis://h:1/0?namespace=n", "some/dir"])
def test_a_location_as_text_reads_back_as_itself(text: str) -> None:
    found = parse_store(text)
    assert parse_store(found.text) == found


def test_a_sqlite_bundle_keeps_limiters_and_the_retry_budget_in_this_process(
    tmp_path: Path,
) -> None:
    limits = {"anthropic": RateLimitSettings(requests_per_minute=60.0)}
    bundle = open_stores(StoreLocation.sqlite(tmp_path), state_dir=tmp_path)
    try:
        limiter = bundle.rate_limiter_registry(limits).limiter_for("anthropic", "m")
        budget = bundle.retry_budget("engine", BudgetSettings())
    finally:
        bundle.close()
    assert isinstance(limiter, RateLimiter)
    assert limiter.settings.requests_per_minute == 60.0
    assert isinstance(budget, RetryBudget)


def test_a_redis_bundle_shares_its_limiters_and_retry_budget_through_redis(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    from backstay.store.redis import RedisRateLimiter, RedisRetryBudget  # noqa: PLC0415

    limits = {"anthropic": RateLimitSettings(requests_per_minute=60.0, burst_s=1.0)}
    bundles = [open_stores(redis_location, state_dir=tmp_path) for _ in range(2)]
    try:
        first, second = (
            b.rate_limiter_registry(limits).limiter_for("anthropic", "m") for b in bundles
        )
        assert isinstance(first, RedisRateLimiter)
        assert first.reserve() == 0.0
        assert second.reserve() == pytest.approx(1.0, abs=0.1)  # behind the first one's
        budget = bundles[0].retry_budget("engine", BudgetSettings(ratio=0.0, min_retries_per_s=0.1))
        other = bundles[1].retry_budget("engine", BudgetSettings(ratio=0.0, min_retries_per_s=0.1))
        assert isinstance(budget, RedisRetryBudget)
        assert (budget.try_spend_retry(), other.try_spend_retry()) == (True, False)
    finally:
        for bundle in bundles:
            bundle.close()
