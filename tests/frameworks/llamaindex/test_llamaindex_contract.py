"""The LlamaIndex adapter passes the framework contract suite, with the real llama-index-workflows
package against the fake provider."""

from __future__ import annotations

from backstay.frameworks.llamaindex import LlamaIndexAdapter
from backstay.testing.framework_contract import FrameworkContract


class TestLlamaIndexContract(FrameworkContract):
    def make_framework(self, base_url: str, api_key: str) -> LlamaIndexAdapter:
        return LlamaIndexAdapter(base_url=base_url + "/v1", api_key=api_key, model="gpt-5")
