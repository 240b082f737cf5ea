"""A request's span (``backstay.gateway.spans.request_span``): made at the tracer provider
given, and not made at all while no provider records spans."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from backstay.gateway.routes import Route
from backstay.gateway.spans import SPAN_NAME, _NoSpan, request_span

ROUTE = Route(provider="openai", model="gpt-5", endpoint="/v1/chat/completions")


def test_each_request_is_a_span_at_the_given_provider() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for status in (200, 529):
        with request_span(ROUTE, None, provider) as span:
            span.set_attribute("http.response.status_code", status)
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == [SPAN_NAME, SPAN_NAME]
    assert [s.attributes["http.response.status_code"] for s in spans] == [200, 529]
    assert spans[0].attributes["gen_ai.request.model"] == "gpt-5"
    provider.shutdown()


def test_no_span_is_made_while_no_provider_records_them() -> None:
    for stand_in in (trace.NoOpTracerProvider(), trace.ProxyTracerProvider()):
        with request_span(ROUTE, None, stand_in) as span:
            assert isinstance(span, _NoSpan)
            span.set_attribute("http.response.status_code", 200)
