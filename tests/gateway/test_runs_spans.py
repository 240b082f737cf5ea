"""The gateway ``backstay run`` / ``batch`` / ``resume`` start for agent runs
(``cli._gateway_runs.agent_gateway``): it serves while the block runs and is gone after,
an attempt pointed at it (``gateway_wiring.open_run``) reaches the provider with the real
key, and its request is a span in the same trace as the attempt, sent where the command's
OpenTelemetry sink sends its spans (the provider backstay made for ``observe.otel``)."""

from __future__ import annotations

from pathlib import Path

import anthropic
import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.gateway.helpers import ANTHROPIC_MODEL, CANARY_KEY, MESSAGES

from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.contract import AgentRequest
from backstay.adapters.gateway_wiring import current_gateway, open_run
from backstay.cli._gateway_runs import agent_gateway
from backstay.events import add_sink, remove_sink
from backstay.events.tracecontext import TraceContext, set_current
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.observe.otel import OtelSink

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_an_attempts_request_is_a_span_of_its_trace_at_the_sinks_provider(
    tmp_path: Path,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = OtelSink(tracer_provider=provider)
    add_sink(sink)
    try:
        with FakeProvider(Scenario()) as fake, agent_gateway(["claude-code"]) as url:
            assert url is not None
            assert current_gateway() is not None
            request = AgentRequest(
                model=ANTHROPIC_MODEL,
                workspace=tmp_path,
                output_dir=tmp_path / "out",
                timeout_s=60.0,
                prompt="hi",
                env={"ANTHROPIC_API_KEY": CANARY_KEY, "ANTHROPIC_BASE_URL": fake.url},
            )
            set_current(TraceContext(traceparent=f"00-{TRACE_ID}-00f067aa0ba902b7-01"))
            try:
                opened = open_run(
                    ClaudeCodeAdapter.gateway_wiring, request, operation_id="op", attempt_id="a1"
                )
            finally:
                set_current(None)
            assert opened is not None
            token = opened.request.env["ANTHROPIC_API_KEY"]
            with anthropic.Anthropic(base_url=url, api_key=token, max_retries=0) as client:
                client.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]
            counts = opened.close()
            assert counts is not None
            assert counts.requests == fake.stats().requests == 1
        assert current_gateway() is None
        with pytest.raises(httpx.ConnectError):
            httpx.get(url + "/v1/models", timeout=5)  # stopped with the block
    finally:
        remove_sink(sink)
    spans = [s for s in exporter.get_finished_spans() if s.name == "gateway.request"]
    assert len(spans) == 1
    assert spans[0].context is not None
    assert f"{spans[0].context.trace_id:032x}" == TRACE_ID
    assert dict(spans[0].attributes or {})["backstay.attempt_id"] == "a1"


def test_no_gateway_starts_for_adapters_without_an_agent_cli() -> None:
    with agent_gateway(["mock", "anthropic-api"]) as url:
        assert url is None
        assert current_gateway() is None


def test_no_gateway_starts_when_it_is_turned_off() -> None:
    with agent_gateway(["claude-code"], enabled=False) as url:
        assert url is None
        assert current_gateway() is None
