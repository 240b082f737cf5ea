"""One OpenTelemetry span per request the gateway answers, a child of the run's trace when
the request came with a run token whose attempt had one (``RunTicket.traceparent``).

OpenTelemetry is optional: without ``opentelemetry-api`` installed, ``request_span`` does
nothing. Spans go to the given tracer provider, else the global one (the application's,
or the one ``backstay.observe`` set up). While neither is set (the global one is still
OpenTelemetry's stand-in, which records nothing), no span is made at all: a request costs
no span work when nobody exports spans. No header, key or body is put on a span.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from backstay.gateway.routes import Route
    from backstay.gateway.runs import RunTicket

__all__ = ["SPAN_NAME", "RequestSpan", "recording", "request_span"]

SPAN_NAME: Final = "gateway.request"
_HAS_OTEL: Final = importlib.util.find_spec("opentelemetry") is not None


class RequestSpan(Protocol):
    """What the handler notes on a request's span once its answer is decided."""

    def set_attribute(self, key: str, value: Any) -> Any: ...


class _NoSpan:
    def set_attribute(self, key: str, value: Any) -> None:
        return None


def recording(tracer_provider: Any = None) -> bool:
    """Whether ``request_span`` would make a span: OpenTelemetry is installed and
    ``tracer_provider`` (else the global one) is not its stand-in. Asked per request, so
    that a request costs no span work at all while nobody exports spans."""
    if not _HAS_OTEL:
        return False
    trace = _trace()
    provider = tracer_provider or trace.get_tracer_provider()
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


@functools.cache
def _trace() -> Any:
    from opentelemetry import trace  # noqa: PLC0415 - optional, loaded on use

    return trace


@functools.lru_cache(maxsize=8)
def _tracer(provider: Any) -> Any:
    """The gateway's tracer of ``provider`` (asked once per provider, not per request)."""
    return provider.get_tracer("backstay.gateway")


@contextlib.contextmanager
def request_span(
    route: Route, ticket: RunTicket | None, tracer_provider: Any = None
) -> Iterator[RequestSpan]:
    """A span around one request for ``route`` (of the run of ``ticket``, if any)."""
    if not _HAS_OTEL:
        yield _NoSpan()
        return
    from opentelemetry import trace  # noqa: PLC0415 - optional, loaded on use
    from opentelemetry.trace.propagation.tracecontext import (  # noqa: PLC0415
        TraceContextTextMapPropagator,
    )

    provider = tracer_provider or trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        yield _NoSpan()  # no provider set: its spans would record nothing
        return
    tracer = _tracer(provider)
    parent = None
    if ticket is not None and ticket.traceparent:
        parent = TraceContextTextMapPropagator().extract({"traceparent": ticket.traceparent})
    attributes: dict[str, str] = {
        "gen_ai.provider.name": route.provider,
        "gen_ai.request.model": route.model,
        "backstay.gateway.endpoint": route.endpoint,
    }
    if ticket is not None:
        attributes |= {
            name: value
            for name, value in (
                ("backstay.operation_id", ticket.task),
                ("backstay.attempt_id", ticket.attempt),
            )
            if value
        }
    with tracer.start_as_current_span(
        SPAN_NAME,
        context=parent,
        kind=trace.SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=True,
    ) as span:
        yield span
