"""The adapter contract for a real agent CLI: each scenario acted out by a fake provider
inside a private network namespace, the CLI run there through its adapter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

import pytest
from tests.adapters.argv_watch import PromptNotOnArgv
from tests.adapters.cli_provider import BASE_ENV, Providers, Served, installed

from backstay.adapters.contract import Adapter
from backstay.testing.contract import RETRY_AFTER_S, ContractScenario

# The contract's scenarios as fake-provider faults (a scenario file's ``faults``).
FAULTS: Final[Mapping[ContractScenario, list[dict[str, Any]]]] = {
    "success": [],
    "network_error": [{"fault": "reset", "first": 2, "after_events": 0}],
    "rate_limit_with_wait": [{"fault": "rate_limit", "first": 1, "retry_after_s": RETRY_AFTER_S}],
    "context_overflow": [{"fault": "context_overflow"}],
    "content_policy": [{"fault": "content_policy"}],
    "quota_exhausted": [{"fault": "quota_exhausted"}],
    "hang": [{"fault": "hang"}],
}
# Faults of the first requests only: each test needs a provider that has seen none yet.
COUNTED: Final = frozenset({"network_error", "rate_limit_with_wait"})


class RealCliContract(PromptNotOnArgv):
    """Subclass with ``cli`` (its catalogue name), ``adapter_class`` and ``key_env``."""

    cli: ClassVar[str] = ""
    adapter_class: ClassVar[type[Adapter]]
    key_env: ClassVar[Mapping[str, str]] = {}
    timeout_s: ClassVar[float] = 90.0
    providers: Providers
    served: dict[str, Served]

    @pytest.fixture(autouse=True)
    def _namespace(self, providers: Providers) -> None:
        installed(self.cli)
        self.providers = providers
        self.served = {}

    def _provider(self, scenario: ContractScenario) -> Served:
        if scenario not in COUNTED:
            return self.providers.shared(scenario, {"faults": FAULTS[scenario]})
        if scenario not in self.served:
            self.served[scenario] = self.providers.serve({"faults": FAULTS[scenario]})
        return self.served[scenario]

    def make_adapter(self, scenario: ContractScenario) -> Adapter:
        self._provider(scenario)  # started now: before the contract watches for processes
        return self.adapter_class()

    def adapter_config(self, scenario: ContractScenario) -> Mapping[str, Any]:
        return {"base_url": self._provider(scenario).url, "launcher": self.providers.launcher}

    def adapter_env(self, scenario: ContractScenario) -> Mapping[str, str]:
        return {**BASE_ENV, **self.key_env}
