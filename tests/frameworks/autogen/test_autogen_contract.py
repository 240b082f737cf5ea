"""The AutoGen adapter passes the framework contract suite, with the real autogen-agentchat
package against the fake provider."""

from __future__ import annotations

from backstay.frameworks.autogen import AutoGenAdapter
from backstay.testing.framework_contract import FrameworkContract


class TestAutoGenContract(FrameworkContract):
    def make_framework(self, base_url: str, api_key: str) -> AutoGenAdapter:
        return AutoGenAdapter(base_url=base_url + "/v1", api_key=api_key, model="gpt-5")
