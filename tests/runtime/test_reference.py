"""The reference framework adapter passes the framework contract against the fake
provider, through the official Anthropic SDK."""

from __future__ import annotations

import asyncio

import anthropic
import httpx2

from backstay.fakeprovider import FakeProvider, Reply, Scenario, ToolCall
from backstay.runtime import (
    TRACE_HEADER,
    FrameworkAdapter,
    RunStatus,
    Runtime,
    RuntimeSettings,
    Tool,
    ToolPolicy,
)
from backstay.runtime.reference import ReferenceAdapter
from backstay.testing.framework_contract import FrameworkContract


class TestReferenceAdapter(FrameworkContract):
    def make_framework(self, base_url: str, api_key: str) -> FrameworkAdapter:
        return ReferenceAdapter(base_url=base_url, api_key=api_key)


def test_every_model_request_carries_the_runs_trace_id_header() -> None:
    seen: list[str | None] = []

    async def capture(request: httpx2.Request) -> None:
        seen.append(request.headers.get(TRACE_HEADER))

    async def go(url: str) -> str:
        client = anthropic.DefaultAsyncHttpxClient(event_hooks={"request": [capture]})
        adapter = ReferenceAdapter(base_url=url, api_key="test-key", http_client=client)
        runtime = Runtime(
            adapter,
            tools=[Tool(name="probe", fn=lambda: "ok")],
            settings=RuntimeSettings(tools=ToolPolicy(allowed={"probe"})),
        )
        try:
            record = await runtime.run("probe it")
        finally:
            await adapter.aclose()
        assert record.status is RunStatus.SUCCEEDED, record.failure
        return record.trace_id

    with FakeProvider(Scenario(reply=Reply(tool_call=ToolCall(name="probe")))) as fake:
        trace_id = asyncio.run(go(fake.url))
    assert seen == [trace_id, trace_id]
