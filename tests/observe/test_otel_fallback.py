"""A task whose fallback chain moved: ``task.started`` and ``attempt.ended`` name the
candidate each attempt ran on, and so do the OpenTelemetry attempt spans, while the task
span names the model the task asked for. The mock agent is a real subprocess."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.engine.support import clock, engine, spec

from backstay.adapters.mock import MockAdapter
from backstay.engine import TaskState
from backstay.engine.events import AttemptEnded, TaskStarted
from backstay.fallback import Candidate
from backstay.observe import add_sink, remove_sink
from backstay.observe.otel import OtelSink
from backstay.testing import CapturedEvents, capture_events

DONE: Final[list[dict[str, Any]]] = [{"result": "done", "input_tokens": 10, "output_tokens": 5}]
SPARE: Final = Candidate(adapter="mock", model="mock-spare")


def _fell_back(tmp_path: Path) -> tuple[CapturedEvents, tuple[ReadableSpan, ...]]:
    """Run one task on ``mock-main`` that is overloaded once and moves to ``mock-spare``."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    overloaded = [{"error": "overloaded"}]
    config = {"scenario": {"attempts": [overloaded, DONE]}, "state_dir": str(tmp_path / "mock")}
    task = spec(workspace, adapter="mock", model="mock-main", config=config, fallbacks=(SPARE,))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = OtelSink(
        tracer_provider=provider, meter_provider=MeterProvider([InMemoryMetricReader()])
    )
    add_sink(sink)
    try:
        with capture_events() as events, engine(tmp_path / "s", MockAdapter(), fake=clock()) as eng:
            eng.run_sync([task])
            (record,) = eng.store.tasks()
            assert record.state is TaskState.SUCCEEDED
    finally:
        remove_sink(sink)
        sink.close()
    return events, exporter.get_finished_spans()


def test_attempt_events_name_the_candidate_and_the_requested_model(tmp_path: Path) -> None:
    events, _ = _fell_back(tmp_path)
    started = [e for e in events if isinstance(e, TaskStarted)]
    ended = [e for e in events if isinstance(e, AttemptEnded)]
    assert [e.model for e in started] == ["mock-main", "mock-spare"]
    assert [(e.model, e.outcome) for e in ended] == [
        ("mock-main", "failed"),
        ("mock-spare", "succeeded"),
    ]
    assert {e.requested_model for e in (*started, *ended)} == {"mock-main"}


def test_attempt_ended_comes_before_fell_back(tmp_path: Path) -> None:
    events, _ = _fell_back(tmp_path)
    names = [n for n in events.names if n in {"attempt.ended", "task.fell_back"}]
    assert names == ["attempt.ended", "task.fell_back", "attempt.ended"]


def test_the_fallback_attempt_span_carries_the_answering_model(tmp_path: Path) -> None:
    _, spans = _fell_back(tmp_path)
    attempts = sorted(
        (s for s in spans if s.name == "invoke_agent mock"),
        key=lambda s: s.attributes["backstay.attempt"],  # type: ignore[index,arg-type,return-value]
    )
    (task,) = [s for s in spans if s.name == "invoke_agent t1"]
    assert [s.attributes["gen_ai.request.model"] for s in attempts] == [  # type: ignore[index]
        "mock-main",
        "mock-spare",
    ]
    assert attempts[1].attributes["gen_ai.response.model"] == "mock-spare"  # type: ignore[index]
    assert attempts[1].attributes["backstay.requested_model"] == "mock-main"  # type: ignore[index]
    assert "gen_ai.response.model" not in attempts[0].attributes  # type: ignore[operator]
    assert task.attributes["gen_ai.request.model"] == "mock-main"  # type: ignore[index]
