"""The request spans of a Ray worker's gateway, handed to the driver as events
(``backstay.gateway.span_records``, ``backstay.events.spans``): a worker's gateway whose plan
asks for spans records each request of a run as a ``SpanRecorded`` (no exporter of its
own), and an ``OtelSink`` that gets it among the task's events, before the attempt's end,
makes it a ``gateway.request`` span under that attempt's span with the recorded times. No
Ray here: the worker's gateway in this process, the official SDK through it to the fake
provider; ``tests/executors/test_ray_spans.py`` (slow) runs it on a Ray cluster."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anthropic
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.engine.support import ScriptedAdapter, engine, spec
from tests.gateway.helpers import ANTHROPIC_MODEL, CANARY_KEY, FAST_POLICY, MESSAGES

from backstay.engine.events import AttemptEnded
from backstay.events import Event
from backstay.events.spans import SpanRecorded
from backstay.executors.ray_gateway import WorkerGateway, WorkerRunGateway
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.gateway.spans import SPAN_NAME
from backstay.observe.otel import OtelSink
from backstay.testing import capture_events


def _recorded(attempt_id: str, *, spans: bool) -> list[SpanRecorded]:
    """One request of a run (task ``wf:t1:…``) through a worker's gateway, a 529 then the
    answer: what it recorded."""
    gateway = WorkerRunGateway(WorkerGateway(policy=FAST_POLICY, deadline_s=60.0, spans=spans))
    faults = (Fault(kind=FaultKind.OVERLOADED, first=1, retry_after_s=0.001),)
    try:
        with capture_events() as events, FakeProvider(Scenario(faults=faults)) as fake:
            token = gateway.open_run(
                provider="anthropic",
                key=CANARY_KEY,
                upstream=fake.url,
                task="op-of-the-worker",
                attempt=attempt_id,
                traceparent=None,
                model=ANTHROPIC_MODEL,
            )
            with anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as c:
                c.messages.create(
                    model=ANTHROPIC_MODEL,
                    max_tokens=20,
                    messages=MESSAGES,  # type: ignore[arg-type]
                )
            gateway.close_run(token)
    finally:
        gateway.stop()
    return [e for e in events if isinstance(e, SpanRecorded)]


def test_a_worker_gateway_records_its_request_spans_only_when_asked() -> None:
    assert _recorded("op-of-the-worker:attempt_1", spans=False) == []
    (recorded,) = _recorded("op-of-the-worker:attempt_1", spans=True)
    assert recorded.span == SPAN_NAME
    assert recorded.operation == "op-of-the-worker"
    assert recorded.attempt == "op-of-the-worker:attempt_1"
    assert 0 < recorded.start_ns <= recorded.end_ns
    assert recorded.attributes["gen_ai.provider.name"] == "anthropic"
    assert recorded.attributes["gen_ai.request.model"] == ANTHROPIC_MODEL
    assert recorded.attributes["backstay.gateway.attempts"] == 2
    assert recorded.error is None
    assert CANARY_KEY not in repr(recorded)


def test_the_driver_makes_a_recorded_span_a_child_of_its_attempt(tmp_path: Path) -> None:
    """A task's events as a worker hands them back (its gateway's recorded span before its
    attempt's end), emitted to the driver's ``OtelSink``: the request span is in the task's
    trace, under the attempt's span, at the times recorded."""
    with capture_events() as events, engine(tmp_path, ScriptedAdapter({})) as eng:
        eng.run_sync([spec(tmp_path)])
    task_events: list[Event] = [e for e in events if e.level >= 20]
    ended = next(e for e in task_events if isinstance(e, AttemptEnded))
    assert ended.operation is not None
    (recorded,) = _recorded(ended.attempt_id, spans=True)
    recorded = dataclasses.replace(recorded, operation=ended.operation)
    handed_back = [*task_events]
    handed_back.insert(handed_back.index(ended), recorded)

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = OtelSink(
        tracer_provider=provider, meter_provider=MeterProvider([InMemoryMetricReader()])
    )
    try:
        for event in handed_back:
            sink.emit(event)
    finally:
        sink.close()
    spans = exporter.get_finished_spans()
    (request,) = [s for s in spans if s.name == SPAN_NAME]
    (attempt,) = [s for s in spans if s.name == "invoke_agent fake"]
    assert request.parent is not None
    assert request.parent.span_id == attempt.context.span_id
    assert request.context.trace_id == attempt.context.trace_id
    assert (request.start_time, request.end_time) == (recorded.start_ns, recorded.end_ns)
    assert request.attributes is not None
    assert request.attributes["backstay.attempt_id"] == ended.attempt_id
    assert request.attributes["backstay.gateway.attempts"] == 2
