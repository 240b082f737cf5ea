"""``OtelSink``: the engine's events as OpenTelemetry traces and metrics, following the
GenAI semantic conventions (``backstay[otel]``: opentelemetry-sdk and the OTLP/HTTP
exporter).

Traces. A batch is an ``invoke_workflow {workflow}`` span; each task is the root of its own
trace, an ``invoke_agent {task}`` span linked to the batch's; each attempt is a CLIENT span
under its task — ``chat {model}`` for the API adapters, ``invoke_agent {adapter}`` for
the agent CLIs — carrying ``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.request.model``, ``gen_ai.response.model`` (a succeeded attempt's), the usage
tokens, ``error.type`` (the failure kind) and backstay's own facts as ``backstay.*``. An
attempt a fallback chain moved to another candidate carries that candidate's adapter and
model (the answering one); ``backstay.requested_model`` and the task span's
``gen_ai.request.model`` name the model the task asked for.
Waits are child spans lasting the wait (``wait backoff``, ``wait retry_after``,
``wait circuit_open``, ``wait rate_limiter``), so a trace shows where the time went;
circuit changes are span events. While an attempt runs, its ``traceparent`` is the
current ``backstay.events.tracecontext``: the adapters send it on. A span recorded where
the trace is not (``SpanRecorded``: a Ray worker's gateway request) is made a child of the
attempt running then, with its recorded times.

Metrics: ``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage`` per
attempt, ``backstay.retries`` and ``backstay.wait.duration``.

Content (prompts, outputs) is never in backstay's events, so never exported; with
``capture_content`` failure messages (which may quote a provider's text) are added. Every
string exported goes through ``backstay.redact``. Spans are flushed (on a background
thread, never blocking the batch) as each task ends, and ``close()`` flushes the rest.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode, TracerProvider

from backstay._version import __version__
from backstay.breaker.events import CircuitClosed, CircuitHalfOpened, CircuitOpened
from backstay.engine.events import (
    AttemptEnded,
    TaskCancelled,
    TaskDeferred,
    TaskEscalated,
    TaskFailed,
    TaskPaused,
    TaskResumed,
    TaskStarted,
    TaskSucceeded,
)
from backstay.events import Event, RateLimited, RetryScheduled
from backstay.events.spans import SpanRecorded
from backstay.events.tracecontext import TraceContext, set_current
from backstay.failure import Failure
from backstay.observe.genai import is_api_adapter, operation_name, provider_name
from backstay.observe.otel_watch import ExportWatch, finish_within
from backstay.observe.prometheus import STEP_BUCKETS_S
from backstay.redact import redact

__all__ = ["OtelSink"]

_log = logging.getLogger("backstay")
_ENDS: Final = (TaskSucceeded, TaskFailed, TaskCancelled, TaskPaused, TaskEscalated)
_CIRCUIT_STATES: Final = {
    CircuitOpened: "open",
    CircuitHalfOpened: "half_open",
    CircuitClosed: "closed",
}
_S_TO_NS: Final = 1_000_000_000
# The shortest time between two flushes at task ends (close() flushes at once).
FLUSH_INTERVAL_S: Final = 0.2


def _workflow_of(operation: str) -> str:
    return operation.split(":", 1)[0]


class _Task:
    """The spans of one task while it runs in this process."""

    __slots__ = ("attempt", "attempt_ctx", "ctx", "span", "waits")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.ctx = trace.set_span_in_context(span, otel_context.Context())
        self.attempt: Span | None = None
        self.attempt_ctx: otel_context.Context | None = None
        self.waits: list[str] = []


class _Flusher:
    """Flushes the tracer provider on a daemon thread whenever asked, so that a task's
    end never waits for the exporter; requests made while a flush runs, or within
    ``FLUSH_INTERVAL_S`` of the last, are served by one more flush."""

    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider
        self._wanted = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="backstay-otel-flush", daemon=True)
        self._thread.start()

    def request(self) -> None:
        if not self._wanted.is_set():
            self._wanted.set()

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            if self._stopped:
                return
            self._wanted.clear()
            _force_flush(self._provider)
            time.sleep(FLUSH_INTERVAL_S)

    def stop(self) -> None:
        self._stopped = True
        self._wanted.set()
        self._thread.join(timeout=10)


def _force_flush(provider: object) -> None:
    flush = getattr(provider, "force_flush", None)
    if callable(flush):
        flush()


class OtelSink:
    """A sink turning events into spans and metrics; see the module docstring.

    ``tracer_provider`` / ``meter_provider``: where spans and metrics go (default: the
    global providers, which are the application's own when it set them).
    ``capture_content``: add failure messages to the spans. ``shutdown_providers``: shut
    them down on ``close()`` (for providers made for backstay alone). ``watch``: the
    ``ExportWatch`` of backstay's own exporters; ``close()`` waits for the last export at
    most ``EXIT_WAIT_S`` once it saw the endpoint fail (``backstay.observe.otel_watch``).
    """

    min_level = logging.DEBUG

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool = False,
        shutdown_providers: bool = False,
        watch: ExportWatch | None = None,
    ) -> None:
        self._watch = watch
        self.tracer_provider = tracer_provider or trace.get_tracer_provider()
        self.meter_provider = meter_provider or metrics.get_meter_provider()
        self.capture_content = capture_content
        self._shutdown = shutdown_providers
        self._tracer = self.tracer_provider.get_tracer("backstay", __version__)
        meter = self.meter_provider.get_meter("backstay", __version__)
        self._duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="Duration of each attempt (a model call or an agent run).",
            explicit_bucket_boundaries_advisory=list(STEP_BUCKETS_S),
        )
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens used per attempt."
        )
        self._retries = meter.create_counter(
            "backstay.retries", unit="{retry}", description="Retries scheduled, by failure kind."
        )
        self._waited = meter.create_histogram(
            "backstay.wait.duration", unit="s", description="Waits, by reason."
        )
        self._lock = threading.Lock()
        self._attr_cache: dict[
            tuple[str, str, str | None], tuple[dict[str, str], dict[str, str], dict[str, str]]
        ] = {}
        self._tasks: dict[str, _Task] = {}
        self._workflows: dict[str, Span] = {}
        self._flusher = _Flusher(self.tracer_provider)
        self._closed = False

    # -- the sink protocol --------------------------------------------------------------

    def accepts(self, level: int) -> bool:
        return not self._closed

    def emit(self, event: Event) -> None:
        if self._closed or event.operation is None:
            return
        with self._lock:
            self._handle(event, event.operation)

    def _handle(self, event: Event, op: str) -> None:
        if isinstance(event, TaskStarted):
            self._attempt_started(event, op)
        elif isinstance(event, AttemptEnded):
            self._attempt_ended(event, op)
        elif isinstance(event, RetryScheduled):
            reason = "backoff" if event.failure.retry_after_s is None else "retry_after"
            self._wait(op, reason, event.delay_s, {"backstay.attempt": event.attempt})
            self._retries.add(1, {"error.type": str(event.failure.kind)})
        elif isinstance(event, TaskDeferred):
            attrs = {"backstay.attempt": event.attempt, "backstay.circuit": event.breaker}
            self._wait(op, "circuit_open", event.wait_s, attrs, task_id=event.task_id)
        elif isinstance(event, RateLimited) and not event.scheduled_retry:
            self._wait(op, "rate_limiter", event.wait_s, {"backstay.attempt": event.attempt})
        elif isinstance(event, CircuitOpened | CircuitHalfOpened | CircuitClosed):
            self._circuit(event, op)
        elif isinstance(event, TaskResumed):
            task = self._task(op, event.task_id)
            task.span.add_event(
                "backstay.resumed",
                {
                    "backstay.previous_state": event.previous_state,
                    "backstay.reason": redact(event.reason),
                },
            )
        elif isinstance(event, _ENDS):
            self._task_ended(event, op)
        elif isinstance(event, SpanRecorded):
            self._recorded(event, op)

    # -- spans ----------------------------------------------------------------------------

    def _workflow(self, op: str) -> Span:
        workflow = _workflow_of(op)
        span = self._workflows.get(workflow)
        if span is None:
            span = self._tracer.start_span(
                f"invoke_workflow {workflow}",
                kind=SpanKind.INTERNAL,
                attributes={
                    "gen_ai.operation.name": "invoke_workflow",
                    "backstay.workflow_id": workflow,
                },
            )
            self._workflows[workflow] = span
        return span

    def _task(self, op: str, task_id: str | None = None) -> _Task:
        task = self._tasks.get(op)
        if task is None:
            workflow = self._workflow(op)
            name = task_id or (op.split(":")[1] if ":" in op else op)
            span = self._tracer.start_span(
                f"invoke_agent {name}",
                context=otel_context.Context(),  # each task is the root of its own trace
                kind=SpanKind.INTERNAL,
                links=[Link(workflow.get_span_context())],
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "backstay.operation_id": op,
                    "backstay.task_id": name,
                    "backstay.workflow_id": _workflow_of(op),
                },
            )
            task = self._tasks[op] = _Task(span)
        return task

    def _attempt_started(self, event: TaskStarted, op: str) -> None:
        task = self._task(op, event.task_id)
        adapter, model = event.adapter, event.model
        provider = provider_name(adapter, model)
        operation = operation_name(adapter)
        # The task span names what the task asked for; the attempt span what answered.
        asked, requested = event.requested_adapter or adapter, event.requested_model or model
        task.span.set_attributes(
            {
                "gen_ai.agent.name": asked,
                "gen_ai.provider.name": provider_name(asked, requested),
                "gen_ai.request.model": requested,
            }
        )
        name = f"chat {model}" if is_api_adapter(adapter) else f"invoke_agent {adapter}"
        span = self._tracer.start_span(
            name,
            context=task.ctx,
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": operation,
                "gen_ai.provider.name": provider,
                "gen_ai.request.model": model,
                "gen_ai.agent.name": adapter,
                "backstay.operation_id": op,
                "backstay.attempt_id": event.attempt_id,
                "backstay.attempt": event.attempt,
                "backstay.adapter": adapter,
                "backstay.requested_model": requested,
            },
        )
        task.attempt = span
        task.attempt_ctx = trace.set_span_in_context(span, otel_context.Context())
        found = span.get_span_context()
        if found.is_valid:  # the W3C format, as TraceContextTextMapPropagator writes it
            set_current(
                TraceContext(
                    traceparent=f"00-{found.trace_id:032x}-{found.span_id:016x}-"
                    f"{found.trace_flags:02x}",
                    tracestate=found.trace_state.to_header(),
                )
            )

    def _recorded(self, event: SpanRecorded, op: str) -> None:
        """A span made elsewhere (a Ray worker's gateway request): a child of the attempt
        running now (else of the task), at the times it was recorded with."""
        task = self._tasks.get(op)
        if task is None:  # no trace of its task here
            return
        parent = task.attempt_ctx or task.ctx
        attributes = {key: value for key, value in event.attributes.items() if value is not None}
        span = self._tracer.start_span(
            event.span,
            context=parent,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=event.start_ns,
        )
        if event.error is not None:
            span.set_status(Status(StatusCode.ERROR, redact(event.error)))
        span.end(end_time=max(event.end_ns, event.start_ns))

    def _attempt_ended(self, event: AttemptEnded, op: str) -> None:
        task = self._tasks.get(op)
        set_current(None)
        if task is None or task.attempt is None:
            return
        span, usage = task.attempt, event.usage
        attrs: dict[str, Any] = {
            "gen_ai.usage.input_tokens": usage.prompt_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
            "gen_ai.usage.cache_write.input_tokens": usage.cache_write_tokens,
            "backstay.outcome": event.outcome,
            "backstay.duration_s": event.duration_s,
        }
        if usage.cost_usd is not None:
            attrs["backstay.cost_usd"] = usage.cost_usd
        if event.delay_s is not None:
            attrs["backstay.retry_delay_s"] = event.delay_s
        failure = event.failure
        error = None if failure is None else str(failure.kind)
        if failure is None:
            attrs["gen_ai.response.model"] = event.model
        else:
            attrs.update(self._failure_attributes(failure))
            span.set_status(Status(StatusCode.ERROR, error))
        span.set_attributes(attrs)
        span.end()
        task.attempt = task.attempt_ctx = None
        found = self._metric_attrs(event.adapter, event.model, error)
        self._duration.record(event.duration_s, found[0])
        if usage.prompt_tokens:
            self._tokens.record(usage.prompt_tokens, found[1])
        if usage.output_tokens:
            self._tokens.record(usage.output_tokens, found[2])

    def _metric_attrs(
        self, adapter: str, model: str, error: str | None
    ) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        """The attributes of an attempt's duration and its input and output tokens (made
        once per adapter, model and error)."""
        key = (adapter, model, error)
        found = self._attr_cache.get(key)
        if found is None:
            base = {
                "gen_ai.operation.name": operation_name(adapter),
                "gen_ai.provider.name": provider_name(adapter, model),
                "gen_ai.request.model": model,
            }
            if error is not None:
                base["error.type"] = error
            found = (
                base,
                {**base, "gen_ai.token.type": "input"},
                {**base, "gen_ai.token.type": "output"},
            )
            self._attr_cache[key] = found
        return found

    def _failure_attributes(self, failure: Failure) -> dict[str, Any]:
        out: dict[str, Any] = {
            "error.type": str(failure.kind),
            "backstay.failure.code": failure.code,
            "backstay.failure.retryable": failure.retryable,
        }
        if failure.status is not None:
            out["http.response.status_code"] = failure.status
        if failure.retry_after_s is not None:
            out["backstay.retry_after_s"] = failure.retry_after_s
        if self.capture_content and failure.message:
            out["backstay.failure.message"] = redact(failure.message)
        return out

    def _wait(
        self,
        op: str,
        reason: str,
        wait_s: float,
        attrs: Mapping[str, Any],
        *,
        task_id: str | None = None,
    ) -> None:
        task = self._task(op, task_id)
        parent = task.attempt_ctx if reason == "rate_limiter" and task.attempt_ctx else task.ctx
        start = time.time_ns()
        span = self._tracer.start_span(
            f"wait {reason}",
            context=parent,
            kind=SpanKind.INTERNAL,
            start_time=start,
            attributes={"backstay.wait.reason": reason, "backstay.wait_s": wait_s, **attrs},
        )
        span.end(end_time=start + int(max(wait_s, 0.0) * _S_TO_NS))
        if reason not in task.waits:
            task.waits.append(reason)
            task.span.set_attribute("backstay.wait_reasons", list(task.waits))
        self._waited.record(wait_s, {"backstay.wait.reason": reason})

    def _circuit(self, event: CircuitOpened | CircuitHalfOpened | CircuitClosed, op: str) -> None:
        state = _CIRCUIT_STATES[type(event)]
        attrs = {"backstay.circuit": event.breaker, "backstay.circuit_state": state}
        task = self._tasks.get(op)
        if task is not None:
            task.span.add_event(f"circuit.{state}", attrs)
            if task.attempt is not None:
                task.attempt.set_attribute("backstay.circuit_state", state)
        self._workflow(op).add_event(f"circuit.{state}", attrs)

    def _task_ended(self, event: Event, op: str) -> None:
        task = self._tasks.pop(op, None)
        if task is None:
            return
        state = event.name.removeprefix("task.")
        task.span.set_attribute("backstay.state", state)
        failure = getattr(event, "failure", None)
        if isinstance(failure, Failure):
            task.span.set_attributes(self._failure_attributes(failure))
        if not isinstance(event, TaskSucceeded):
            task.span.set_status(Status(StatusCode.ERROR, state))
        if task.attempt is not None:
            task.attempt.end()
        task.span.end()
        self._flusher.request()

    # -- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        """End what is still open (a batch stopped mid-way), flush, and shut the providers
        down if they are backstay's own."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for task in self._tasks.values():
                if task.attempt is not None:
                    task.attempt.set_attribute("backstay.outcome", "interrupted")
                    task.attempt.end()
                task.span.set_attribute("backstay.state", "interrupted")
                task.span.end()
            self._tasks.clear()
            for span in self._workflows.values():
                span.end()
            self._workflows.clear()
        try:
            finish_within(self._finish, self._watch)
        finally:
            if self._watch is not None:
                self._watch.remove()

    def _finish(self) -> None:
        """The last flush, and the providers' shutdown when they are backstay's own."""
        self._flusher.stop()
        _force_flush(self.tracer_provider)
        _force_flush(self.meter_provider)
        if self._shutdown:
            for provider in (self.tracer_provider, self.meter_provider):
                shutdown = getattr(provider, "shutdown", None)
                if callable(shutdown):
                    shutdown()
