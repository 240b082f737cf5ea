"""Events: frozen, past-tense facts that core code emits to sinks.

Each event class has a stable ``name`` (``retry.attempt_failed``, ``task.retrying`` …) and a
``level`` (logging levels): sinks declare the lowest level they want, and the driver builds
an event only when some sink wants its level, so a quiet success costs nothing.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, ClassVar

from backstay.failure import Failure

__all__ = ["Event"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of every event: ``operation`` and ``policy`` name where it happened."""

    name: ClassVar[str] = "event"
    level: ClassVar[int] = logging.INFO
    operation: str | None = None
    policy: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields, ``event`` first; a ``Failure`` becomes its ``to_dict``."""
        out: dict[str, Any] = {"event": self.name}
        for name in field_names(type(self)):
            value = getattr(self, name)
            out[name] = value.to_dict() if isinstance(value, Failure) else value
        return out


# The field names of each dataclass asked, in order: ``dataclasses.fields`` builds them
# anew at each call, and every event written asks (a few times a task in a batch).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def field_names(cls: type) -> tuple[str, ...]:
    """The names of the fields of the dataclass ``cls``, in order (kept by class)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names
