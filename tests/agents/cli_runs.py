"""What the tests of the codex and opencode adapters share: the installed CLI or a skip,
fake providers in a namespace per scenario, and one engine task run through an adapter."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import pytest
from tests.agents.clis import CANARY_KEY
from tests.agents.fake_pool import FakePool

from backstay.adapters.contract import Adapter
from backstay.agents import CLIS, agents_dir
from backstay.agents.install import current_install
from backstay.testing.contract import RETRY_AFTER_S, ContractScenario
from backstay.testing.netns import NetworkNamespace

# The contract's scenarios as fake-provider faults (the YAML scenario format).
FAULTS: Final[Mapping[ContractScenario, list[dict[str, Any]]]] = {
    "success": [],
    "network_error": [{"fault": "reset", "first": 2, "after_events": 0}],
    "rate_limit_with_wait": [{"fault": "rate_limit", "first": 1, "retry_after_s": RETRY_AFTER_S}],
    "context_overflow": [{"fault": "context_overflow"}],
    "content_policy": [{"fault": "content_policy"}],
    "quota_exhausted": [{"fault": "quota_exhausted"}],
    "hang": [{"fault": "hang"}],
}
COUNT_WAIT_S: Final = 5.0
KEY_ENV: Final = {"OPENAI_API_KEY": CANARY_KEY, "PATH": "/usr/local/bin:/usr/bin:/bin"}


def require_cli(name: str) -> None:
    """Skip, with the reason, when ``name`` is not installed in the managed directory."""
    root = agents_dir()
    manifest, reason = current_install(CLIS[name], root)
    if manifest is None:
        pytest.skip(f"{name} is not installed in {root} ({reason}): run `make agents`")


class Fakes:
    """Fake providers started for one test, stopped after it."""

    def __init__(self, pool: FakePool) -> None:
        self.pool = pool
        self.urls: list[str] = []

    def start(self, faults: list[dict[str, Any]], **scenario: Any) -> str:
        url = self.pool.start({"faults": faults, **scenario})
        self.urls.append(url)
        return url

    def stop(self) -> None:
        for url in self.urls:
            self.pool.stop(url)


def fakes_fixture(
    netns_pool: tuple[NetworkNamespace, FakePool],
) -> Iterator[tuple[NetworkNamespace, Fakes]]:
    """A function-scoped view on the module's pool (define it as a fixture per module)."""
    namespace, pool = netns_pool
    fakes = Fakes(pool)
    yield namespace, fakes
    fakes.stop()


AdapterFactory = Callable[[tuple[str, ...]], Adapter]


def faults_seen(pool: FakePool, url: str, expected: Mapping[str, int]) -> dict[str, int]:
    """The faults the fake at ``url`` counted, once they are ``expected`` or after
    ``COUNT_WAIT_S`` (a request cut short is counted when the server sees it closed)."""
    deadline = time.monotonic() + COUNT_WAIT_S
    while True:
        seen: dict[str, int] = pool.stats(url)["by_fault"]
        if seen == expected or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir(exist_ok=True)
    return path
