"""The LangGraph adapter passes the framework contract suite, with the real langgraph
package against the fake provider."""

from __future__ import annotations

from backstay.frameworks.langgraph import LangGraphAdapter
from backstay.testing.framework_contract import FrameworkContract


class TestLangGraphContract(FrameworkContract):
    def make_framework(self, base_url: str, api_key: str) -> LangGraphAdapter:
        return LangGraphAdapter(base_url=base_url + "/v1", api_key=api_key, model="gpt-5")
