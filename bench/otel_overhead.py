"""The OpenTelemetry sink's overhead on the engine, per task state transition.

Two measurements, both with the SDK as backstay sets it up for itself (a
``BatchSpanProcessor`` and a ``MeterProvider``), the exporter discarding what it is given so
that no network is timed:

* the sink alone: the events of N succeeded tasks (``task.started``, ``attempt.ended``,
  ``task.succeeded``: what a task's two transitions emit) replayed into ``OtelSink.emit``;
  its cost per task over 2 transitions is the overhead the sink adds to the engine;
* the engine with and without the sink: the engine throughput run (``engine.py``) in
  alternation, best of each; the difference per transition, noisier on a loaded machine.

Target: < 0.2 ms per transition.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

import engine
from backstay.adapters.usage import Usage
from backstay.engine.events import AttemptEnded, TaskStarted, TaskSucceeded
from backstay.events import add_sink, remove_sink
from backstay.observe.otel import OtelSink

TASKS: Final = 2000
ENGINE_TASKS: Final = 300
REPEAT: Final = 3
TRANSITIONS_PER_TASK: Final = 2
TARGET_MS: Final = 0.2
USAGE: Final = Usage(input_tokens=100, output_tokens=20, cost_usd=0.001, api_calls=1)


class _Discard(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _sink() -> OtelSink:
    tracer = TracerProvider()
    tracer.add_span_processor(BatchSpanProcessor(_Discard()))
    meter = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return OtelSink(tracer_provider=tracer, meter_provider=meter, shutdown_providers=True)


def _events(i: int) -> tuple[TaskStarted, AttemptEnded, TaskSucceeded]:
    op = f"bench:t{i:05d}:run_01"
    attempt = f"{op}:attempt_1"
    common = {"operation": op, "policy": "bench", "task_id": f"t{i:05d}"}
    return (
        TaskStarted(**common, attempt=1, attempt_id=attempt, adapter="anthropic-api", model="m"),
        AttemptEnded(
            **common,
            attempt=1,
            attempt_id=attempt,
            adapter="anthropic-api",
            model="m",
            outcome="succeeded",
            duration_s=0.5,
            usage=USAGE,
        ),
        TaskSucceeded(**common, attempts=1),
    )


def sink_ms_per_transition(tasks: int = TASKS) -> tuple[float, float]:
    """The best of ``REPEAT`` replays of ``tasks`` tasks' events into a fresh sink: wall
    time and CPU time of this process (the exporter's thread included), per transition."""
    best_wall = best_cpu = float("inf")
    for _ in range(REPEAT):
        events = [e for i in range(tasks) for e in _events(i)]
        sink = _sink()
        wall, cpu = time.perf_counter(), time.process_time()
        for event in events:
            sink.emit(event)
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        sink.close()
    per = 1e3 / (tasks * TRANSITIONS_PER_TASK)
    return best_wall * per, best_cpu * per


def engine_ms_per_transition(with_sink: bool, tasks: int = ENGINE_TASKS) -> float:
    sink = _sink() if with_sink else None
    if sink is not None:
        add_sink(sink)
    try:
        return engine.measure(tasks, prefix="o" if with_sink else "n").ms_per_transition
    finally:
        if sink is not None:
            remove_sink(sink)
            sink.close()


def report() -> None:
    print(
        "\n== OpenTelemetry sink overhead (SDK BatchSpanProcessor + MeterProvider, "
        "exporter discarding) =="
    )
    wall, cpu = sink_ms_per_transition()
    verdict = "met" if wall < TARGET_MS else "missed"
    print(
        f"  {'the sink alone, per transition (wall)':<44} {wall:9.4f} ms   "
        f"{TASKS} tasks' events, best of {REPEAT}; target < {TARGET_MS} ms: {verdict}"
    )
    print(f"  {'the sink alone, per transition (CPU)':<44} {cpu:9.4f} ms")
    without, with_ = [], []
    for _ in range(REPEAT):
        without.append(engine_ms_per_transition(False))
        with_.append(engine_ms_per_transition(True))
    base, traced = min(without), min(with_)
    print(f"  {'engine per transition, no sink':<44} {base:9.3f} ms   best of {REPEAT}")
    print(f"  {'engine per transition, with the sink':<44} {traced:9.3f} ms   best of {REPEAT}")
    print(
        f"  {'  difference':<44} {traced - base:9.3f} ms   "
        f"({ENGINE_TASKS} tasks; noisy on a shared machine)"
    )


if __name__ == "__main__":
    report()
