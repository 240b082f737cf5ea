"""The trace id of the run a model or tool call belongs to, for code the runtime calls.

The gates set it around every call they make, so a transport, client or tool several
layers down (an HTTP header, a framework's run config) can read it with
``current_trace_id()`` without it being passed by hand.
"""

from __future__ import annotations

import contextvars
from typing import Final

__all__ = ["TRACE_HEADER", "current_trace_id"]

TRACE_HEADER: Final = "x-backstay-trace-id"

_TRACE: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "backstay_trace_id", default=None
)


def current_trace_id() -> str | None:
    """The trace id of the run being executed in this context, if any."""
    return _TRACE.get()


def set_trace_id(trace_id: str | None) -> contextvars.Token[str | None]:
    return _TRACE.set(trace_id)


def reset_trace_id(token: contextvars.Token[str | None]) -> None:
    _TRACE.reset(token)
