"""``SpanRecorded``: an OpenTelemetry span made where its trace is not, handed on as an
event to the process that owns the trace.

A Ray worker's gateway answers a run's requests while the run's trace does not exist yet:
the driver makes the task's and its attempts' spans when it emits again the events the
worker hands back after the task. So the worker's gateway records each request span as a
``SpanRecorded`` (``backstay.gateway.span_records``), the worker hands them back with the
task's other events, each before its attempt's end, and the driver's OpenTelemetry sink
makes each a span of that name under the attempt's span, with the recorded times
(``backstay.observe.otel``). DEBUG: no log line, no ``events.jsonl`` line.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any, ClassVar

from backstay.events.event import Event

__all__ = ["SpanRecorded"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SpanRecorded(Event):
    """A span ended elsewhere, as data: ``span`` its name, ``operation`` the task it
    belongs to, ``attempt`` the attempt's id, ``start_ns`` and ``end_ns`` (epoch
    nanoseconds), its ``attributes`` and ``error`` (its error status, if any)."""

    name: ClassVar[str] = "span.recorded"
    level: ClassVar[int] = logging.DEBUG
    span: str
    attempt: str | None = None
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    error: str | None = None
