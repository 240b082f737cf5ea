"""The adapter contract holds for ``ScriptedAdapter``: in process, no subprocess."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import ClassVar

from backstay.adapters.contract import Adapter
from backstay.adapters.usage import Usage
from backstay.failure import Failure
from backstay.testing import ScriptedAdapter
from backstay.testing.contract import RETRY_AFTER_S, AdapterContract, ContractScenario
from backstay.testing.scripted import Step


def _script(scenario: ContractScenario) -> Sequence[Step]:
    resets = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    scripts: Mapping[ContractScenario, Sequence[Step]] = {
        "success": [Usage(input_tokens=120, output_tokens=40, cost_usd=0.002, api_calls=1)],
        # One raised exception (classified on the way out), one failure code.
        "network_error": [
            ConnectionResetError(104, "Connection reset by peer"),
            "ERR_CONNECTION_REFUSED",
            "ok",
        ],
        "rate_limit_with_wait": [
            Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=RETRY_AFTER_S),
            "ok",
        ],
        "context_overflow": ["ERR_LLM_CONTEXT_LENGTH"],
        "content_policy": ["ERR_LLM_CONTENT_FILTER"],
        "quota_exhausted": [Failure(code="ERR_LLM_DAILY_QUOTA", resets_at=resets)],
        "hang": ["hang"],
    }
    return scripts[scenario]


class TestScriptedAdapter(AdapterContract):
    runs_subprocess: ClassVar[bool] = False
    hang_timeout_s: ClassVar[float] = 0.2

    def make_adapter(self, scenario: ContractScenario) -> Adapter:
        return ScriptedAdapter(_script(scenario))
