"""The adapter contract holds for ``MockAdapter``: a scripted agent CLI in real subprocesses.

Its hang scenario first spawns a grandchild that would sleep for a minute, so the check
that nothing is left behind has something to find if the process group is not killed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from backstay.adapters.contract import Adapter
from backstay.adapters.mock import MockAdapter
from backstay.testing.contract import RETRY_AFTER_S, AdapterContract, ContractScenario

DONE: Final = {"result": "done", "input_tokens": 120, "output_tokens": 40, "cost_usd": 0.002}
ATTEMPTS: Final[Mapping[ContractScenario, list[list[dict[str, Any]]]]] = {
    "success": [[{"print": "working"}, DONE]],
    "network_error": [[{"error": "connection"}], [{"error": "connection"}], [DONE]],
    "rate_limit_with_wait": [[{"error": "rate_limit", "retry_after_s": RETRY_AFTER_S}], [DONE]],
    "context_overflow": [[{"error": "context_overflow"}]],
    "content_policy": [[{"error": "content_filter"}]],
    "quota_exhausted": [[{"error": "quota"}]],
    "hang": [[{"spawn": 60.0}, {"hang": True}]],
}


class TestMockAdapter(AdapterContract):
    def make_adapter(self, scenario: ContractScenario) -> Adapter:
        return MockAdapter()

    def adapter_config(self, scenario: ContractScenario) -> Mapping[str, Any]:
        return {"scenario": {"attempts": ATTEMPTS[scenario]}}
