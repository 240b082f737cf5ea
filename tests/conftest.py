"""Every test starts without the providers' standard variables, whatever the shell that
runs the tests exports: runs inherit them (``backstay.adapters.provider_env``), and a
test says itself which ones it sets.

``redis_server`` is one real ``redis-server`` for the whole test process (started on first
use, stopped by PID at the end); ``redis_location`` a fresh namespace on it per test.
``redis_cluster`` is one real three-node Redis Cluster for the whole test process
(``tests/redis_cluster.py``); ``cluster_location`` a fresh namespace on it per test, with
``cluster=yes``."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator

import pytest
from tests.redis_cluster import cluster_tools, start_cluster
from tests.redis_server import RedisServer, start_redis

from backstay.adapters.provider_env import declared_env
from backstay.adapters.registry import BUILTIN_ADAPTERS, adapter_class
from backstay.store.location import StoreLocation, parse_store

PROVIDER_VARIABLES = sorted(
    {name for adapter in BUILTIN_ADAPTERS for name in declared_env(adapter_class(adapter)).names}
)


@pytest.fixture(autouse=True)
def _no_provider_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


# Real agent-CLI runs that repeat, for the slowest CLIs to start, a contract check that
# `make test` already makes through the real Claude Code and Codex CLIs (and, for each CLI
# below, the adapter's own classification of the same failure in one run). `make test-all`
# runs them; `make test` leaves them out to stay within its time (README, "Tests").
SLOW_REAL_CLI_CHECKS = {
    f"tests/adapters/{module}::{cls}::{test}"
    for module, cls, tests in (
        (
            "cli/aider/test_aider.py",
            "TestAiderContract",
            (
                "test_a_network_failure_is_retried_with_backoff",
                "test_the_operation_id_is_stable_and_the_attempt_id_changes",
                "test_every_attempt_leaves_its_logs_and_metrics",
                # test_aider.py checks the same, with the requests served, module-level:
                # a success, a rate limit, an overflow, a quota, a hang killed at its deadline.
                "test_a_rate_limit_waits_its_retry_after",
                "test_a_context_overflow_fails_the_task_without_a_retry",
                "test_a_successful_task_takes_one_attempt",
                "test_an_exhausted_quota_pauses_the_task",
                "test_every_failure_is_an_adapter_error_with_a_classified_failure[rate_limit_with_wait]",
                "test_every_failure_is_an_adapter_error_with_a_classified_failure[context_overflow]",
                "test_every_failure_is_an_adapter_error_with_a_classified_failure[quota_exhausted]",
                "test_every_failure_is_an_adapter_error_with_a_classified_failure[hang]",
                "test_the_harness_run_exits_124_on_a_timeout",
            ),
        ),
        (
            "cli/opencode/test_opencode_cli.py",
            "TestOpencodeContract",
            (
                "test_a_network_failure_is_retried_with_backoff",
                "test_the_operation_id_is_stable_and_the_attempt_id_changes",
                "test_every_attempt_leaves_its_logs_and_metrics",
                # test_the_engine_retries_a_429_once_and_the_task_succeeds checks it too.
                "test_a_rate_limit_waits_its_retry_after",
            ),
        ),
        (
            "cli/gemini_cli/test_gemini_cli_cli.py",
            "TestGeminiCliContract",
            (
                "test_a_network_failure_is_retried_with_backoff",
                "test_the_operation_id_is_stable_and_the_attempt_id_changes",
                "test_every_attempt_leaves_its_logs_and_metrics",
            ),
        ),
    )
    for test in tests
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the repeated real-CLI checks slow before ``-m "not slow"`` deselects by mark."""
    for item in items:
        if item.nodeid in SLOW_REAL_CLI_CHECKS:
            item.add_marker(pytest.mark.slow)


_namespaces = itertools.count()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (scripts/install-test-deps installs it)")
    server = start_redis()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_location(redis_server: RedisServer) -> StoreLocation:
    """A namespace of its own on the shared test server (``stop`` when it is down)."""
    url = redis_server.url
    namespace = f"t{os.getpid()}-{next(_namespaces)}"
    return parse_store(f"{url}?namespace={namespace}")


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[list[RedisServer]]:
    """The nodes of one three-node cluster (every slot assigned), shared by the tests."""
    cli = cluster_tools()
    if cli is None:
        pytest.skip("redis-server and redis-cli are not installed (scripts/install-test-deps)")
    with start_cluster(cli) as servers:
        yield servers


@pytest.fixture
def cluster_location(redis_cluster: list[RedisServer]) -> StoreLocation:
    """A namespace of its own on the shared cluster, through its first node."""
    namespace = f"c{os.getpid()}-{next(_namespaces)}"
    return parse_store(f"{redis_cluster[0].url}?namespace={namespace}&cluster=yes")
