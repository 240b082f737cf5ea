"""The reference framework adapter passes the framework contract against the fake
provider, through the official Anthropic SDK."""

from __future__ import annotations

from backstay.runtime import FrameworkAdapter
from backstay.runtime.reference import ReferenceAdapter
from backstay.testing.framework_contract import FrameworkContract


class TestReferenceAdapter(FrameworkContract):
    def make_framework(self, base_url: str, api_key: str) -> FrameworkAdapter:
        return ReferenceAdapter(base_url=base_url, api_key=api_key)
