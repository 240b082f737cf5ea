"""The adapter contract holds for the three API adapters, driven by the official SDKs
against a real local HTTP server that answers in each provider's wire format.

Each scenario of the contract is one path on the server (``api_support.Router``): a
dropped connection for the network error, a 429 with Retry-After (Gemini: ``RetryInfo``)
for the rate limit, each provider's context-overflow, content-policy and quota answers,
and a request the server never answers for the hang.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import pytest
from tests.adapters.api_server import ApiServer
from tests.adapters.api_support import Router, base_url, key_env, wire_for

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.api.gemini import GeminiApiAdapter
from backstay.adapters.api.openai import OpenAIApiAdapter
from backstay.adapters.contract import Adapter
from backstay.testing.contract import AdapterContract, ContractScenario


class _ApiContract(AdapterContract):
    runs_subprocess: ClassVar[bool] = False
    adapter_name: ClassVar[str] = ""
    api: ClassVar[str] = "chat"
    stream: ClassVar[bool] = True
    server: ApiServer

    @pytest.fixture(autouse=True)
    def _server(self) -> Iterator[None]:
        wire = wire_for(self.adapter_name, api=self.api, stream=self.stream)
        with ApiServer(Router(wire)) as server:
            self.server = server
            yield

    def make_adapter(self, scenario: ContractScenario) -> Adapter:
        adapters = {
            "anthropic-api": AnthropicApiAdapter,
            "openai-api": OpenAIApiAdapter,
            "gemini-api": GeminiApiAdapter,
        }
        return adapters[self.adapter_name]()

    def adapter_config(self, scenario: ContractScenario) -> Mapping[str, Any]:
        config: dict[str, Any] = {
            "base_url": base_url(self.server, self.adapter_name, scenario),
            "stream": self.stream,
        }
        if self.api != "chat":
            config["api"] = self.api
        return config

    def adapter_env(self, scenario: ContractScenario) -> Mapping[str, str]:
        return key_env(self.adapter_name)


class TestAnthropicApiStreaming(_ApiContract):
    adapter_name = "anthropic-api"


class TestAnthropicApiWhole(_ApiContract):
    adapter_name = "anthropic-api"
    stream = False


class TestOpenAIChatStreaming(_ApiContract):
    adapter_name = "openai-api"


class TestOpenAIResponsesStreaming(_ApiContract):
    adapter_name = "openai-api"
    api = "responses"


class TestOpenAIResponsesWhole(_ApiContract):
    adapter_name = "openai-api"
    api = "responses"
    stream = False


class TestGeminiApiStreaming(_ApiContract):
    adapter_name = "gemini-api"


class TestGeminiApiWhole(_ApiContract):
    adapter_name = "gemini-api"
    stream = False
