"""The request spans of a gateway whose process does not own its runs' traces (a Ray
worker's: ``backstay.executors.ray_gateway``), handed on as events.

The trace of a Ray batch's task is made by the driver, when it emits again the events the
worker handed back after driving the task: while the worker's gateway answers a request
there is no attempt span to make the request's span a child of. So the worker's gateway
is given a tracer provider of its own (``recording_provider``) that exports nothing and
turns each ``gateway.request`` span of a run it ends into a ``SpanRecorded`` event
(``backstay.events.spans``; DEBUG: no log or ``events.jsonl`` line): the run's task
(``operation``) and attempt, the span's start and end (epoch nanoseconds), its attributes
and its error status. The worker hands these back with the task's other events, in the
order they happened (each before its attempt's end), and the driver's OpenTelemetry sink
makes each a ``gateway.request`` span under the attempt's span, with the recorded times
(``backstay.observe.otel``). No header, key or body is on a span, so none is in an event.

Needs opentelemetry-sdk (``backstay[otel]``) where the gateway runs; without it
``recording_provider`` is ``None`` and no span is recorded.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Final

from backstay.events import BUS
from backstay.events.spans import SpanRecorded
from backstay.gateway.spans import SPAN_NAME

__all__ = ["recording_provider"]

# The span attributes naming the run (``backstay.gateway.spans``).
_OPERATION: Final = "backstay.operation_id"
_ATTEMPT: Final = "backstay.attempt_id"


def recording_provider() -> Any:
    """A tracer provider that turns each request span of a run into a ``SpanRecorded``
    on the event bus and exports nothing; ``None`` without
    opentelemetry-sdk."""
    if importlib.util.find_spec("opentelemetry.sdk") is None:
        return None
    from opentelemetry.sdk.trace import (  # noqa: PLC0415 - optional, loaded on use
        ReadableSpan,
        SpanProcessor,
        TracerProvider,
    )
    from opentelemetry.trace import StatusCode  # noqa: PLC0415

    class _Recorder(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            attributes = dict(span.attributes or {})
            operation = attributes.get(_OPERATION)
            if span.name != SPAN_NAME or not isinstance(operation, str):
                return  # not a run's request: no trace of the driver's to join
            status = span.status
            error = None
            if status.status_code is StatusCode.ERROR:
                error = status.description or "error"
            attempt = attributes.get(_ATTEMPT)
            BUS.emit(
                SpanRecorded(
                    span=SPAN_NAME,
                    operation=operation,
                    attempt=attempt if isinstance(attempt, str) else None,
                    start_ns=int(span.start_time or 0),
                    end_ns=int(span.end_time or span.start_time or 0),
                    attributes=attributes,
                    error=error,
                )
            )

    provider = TracerProvider()
    provider.add_span_processor(_Recorder())
    return provider
