"""``OtelSink`` on the engine's events, with an application's own TracerProvider, and
``otel_sink``'s reading of the standard environment variables."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from tests.engine.support import OK, ScriptedAdapter, engine, spec

from backstay.failure import Failure
from backstay.observe import add_sink, remove_sink
from backstay.observe.otel import OtelSink
from backstay.observe.otel_setup import OtelSettings, otel_sink
from backstay.redact import register_secret


@pytest.fixture
def exported() -> Iterator[tuple[OtelSink, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = OtelSink(
        tracer_provider=provider, meter_provider=MeterProvider([InMemoryMetricReader()])
    )
    add_sink(sink)
    try:
        yield sink, exporter
    finally:
        remove_sink(sink)
        sink.close()


def _run(tmp_path: Path, adapter: ScriptedAdapter) -> None:
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])


def _named(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def test_a_retried_task_is_one_trace_with_two_attempts_and_a_wait(
    tmp_path: Path, exported: tuple[OtelSink, InMemorySpanExporter]
) -> None:
    sink, exporter = exported
    _run(tmp_path, ScriptedAdapter({"t1": [Failure(code="ERR_HTTP_500_INTERNAL"), OK]}))
    sink.close()
    spans = exporter.get_finished_spans()
    (task,) = _named(spans, "invoke_agent t1")
    attempts = _named(spans, "invoke_agent fake")
    (wait,) = _named(spans, "wait ")
    assert len(attempts) == 2
    assert {s.context.trace_id for s in (*attempts, wait)} == {task.context.trace_id}
    first, second = sorted(attempts, key=lambda s: s.attributes["backstay.attempt"])  # type: ignore[arg-type,return-value]
    assert first.attributes["error.type"] == "server_error"  # type: ignore[index]
    assert first.status.status_code is StatusCode.ERROR
    assert second.attributes["gen_ai.usage.output_tokens"] == 20  # type: ignore[index]
    assert wait.attributes["backstay.wait.reason"] == "backoff"  # type: ignore[index]
    assert task.attributes["backstay.state"] == "succeeded"  # type: ignore[index]


def test_failure_messages_are_exported_only_when_content_capture_is_on(
    tmp_path: Path, exported: tuple[OtelSink, InMemorySpanExporter]
) -> None:
    sink, exporter = exported
    canary = "sk-ant-otel-canary-0123456789abcdefghij"
    register_secret(canary)
    failure = Failure(code="ERR_LLM_CONTEXT_LENGTH", message=f"too long for {canary}")
    _run(tmp_path / "off", ScriptedAdapter({"t1": [failure]}))
    sink.capture_content = True
    _run(tmp_path / "on", ScriptedAdapter({"t1": [failure]}))
    sink.close()
    messages = [
        s.attributes.get("backstay.failure.message")
        for s in _named(exporter.get_finished_spans(), "invoke_agent fake")
        if s.attributes is not None
    ]
    assert messages[0] is None
    assert messages[1] is not None
    assert "too long for" in str(messages[1])
    assert canary not in str(messages[1])


def test_sdk_disabled_means_no_sink() -> None:
    env = {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    assert otel_sink(OtelSettings(enabled=True), env=env) is None


def test_without_an_endpoint_or_a_provider_there_is_no_sink() -> None:
    assert otel_sink(env={}) is None


def test_an_endpoint_variable_switches_it_on() -> None:
    sink = otel_sink(env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert sink is not None
    sink.close()
