"""The Pydantic-AI adapter passes the framework contract suite, with the real pydantic-ai
package against the fake provider."""

from __future__ import annotations

from backstay.frameworks.pydantic_ai import PydanticAIAdapter
from backstay.testing.framework_contract import FrameworkContract


class TestPydanticAIContract(FrameworkContract):
    def make_framework(self, base_url: str, api_key: str) -> PydanticAIAdapter:
        return PydanticAIAdapter(base_url=base_url + "/v1", api_key=api_key, model="gpt-5")
