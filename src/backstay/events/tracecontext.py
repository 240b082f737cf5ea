"""The W3C trace context of the attempt running in this asyncio task (or thread), for the
adapters to pass on: a ``traceparent`` (and ``tracestate``) header on every API request,
``TRACEPARENT`` / ``TRACESTATE`` in every agent CLI's environment.

A tracing sink (``backstay.observe.otel``) sets it when an attempt starts and clears it
when the attempt ends; it is a ``ContextVar``, so concurrent attempts never see each
other's. Without a tracing sink there is none, and nothing is added.
"""

from __future__ import annotations

import contextvars
import dataclasses

__all__ = ["TraceContext", "current", "set_current", "trace_env", "trace_headers"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TraceContext:
    traceparent: str
    tracestate: str = ""


_CURRENT: contextvars.ContextVar[TraceContext | None] = contextvars.ContextVar(
    "backstay_trace_context", default=None
)


def current() -> TraceContext | None:
    return _CURRENT.get()


def set_current(context: TraceContext | None) -> None:
    """Make ``context`` the current attempt's (None: no attempt is traced)."""
    _CURRENT.set(context)


def trace_headers() -> dict[str, str]:
    """``{"traceparent": …, "tracestate": …}`` of the current attempt (empty if none)."""
    found = _CURRENT.get()
    if found is None:
        return {}
    out = {"traceparent": found.traceparent}
    if found.tracestate:
        out["tracestate"] = found.tracestate
    return out


def trace_env() -> dict[str, str]:
    """``{"TRACEPARENT": …, "TRACESTATE": …}`` of the current attempt (empty if none)."""
    return {key.upper(): value for key, value in trace_headers().items()}
