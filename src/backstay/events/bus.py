"""Sinks receive events. The bus holds them; the standard-logging sink (JSON lines on the
``backstay`` logger, INFO and up) is installed by default.

Adding or removing a sink replaces the bus's tuple (copy on write), so emitting never takes
a lock and never sees a half-updated list. A sink that raises is reported once to the
``backstay`` logger and never breaks the caller's call.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Final, Protocol, runtime_checkable

from backstay.events.event import Event
from backstay.redact import redact

__all__ = ["EVENT_NAME_ATTR", "EventBus", "LoggingSink", "Sink", "add_sink", "remove_sink"]

# The attribute of a ``LogRecord`` the logging sink writes that holds the event's name
# (``retry.attempt_failed``), for a handler's filter.
EVENT_NAME_ATTR: Final = "backstay_event"

_NULL_HANDLER: Final = logging.NullHandler
_log = logging.getLogger("backstay")
_ROOT: Final = logging.getLogger()
# A library logs nothing unless the application configures logging (no "last resort"
# printing of warnings to stderr).
_ONLY_NULL: Final = [logging.NullHandler()]
_log.addHandler(_ONLY_NULL[0])


@runtime_checkable
class Sink(Protocol):
    """Anything with ``min_level``, ``accepts(level)`` and ``emit(event)``.

    ``min_level`` is fixed; ``accepts`` may change its answer at any time (a logger's level).
    """

    min_level: int

    def accepts(self, level: int) -> bool: ...

    def emit(self, event: Event) -> None: ...


def _reaches_a_handler(logger: logging.Logger, level: int) -> bool:
    """Whether a record of ``level`` on ``logger`` would reach a handler that writes: the
    walk ``Logger.callHandlers`` makes (up the hierarchy while loggers propagate, the last
    resort when no handler exists at all), where a plain ``NullHandler`` writes nothing (a
    subclass of it counts as writing). Without it, a library's logger at Python's default
    level would format every warning for a ``NullHandler`` alone."""
    current: logging.Logger | None = logger
    found = False
    while current is not None:
        for handler in current.handlers:
            if type(handler) is not _NULL_HANDLER and level >= handler.level:
                return True
            found = True
        if not current.propagate:
            break
        current = current.parent
    if found:
        return False
    last = logging.lastResort
    return last is not None and level >= last.level


def _unconfigured(logger: logging.Logger) -> bool:
    """Whether ``logger`` is backstay's own in a program that configured no logging: its
    ``NullHandler`` alone, the root without handlers — a record would be written nowhere.
    The commonest answer, found without the walk."""
    return (
        logger is _log
        and _log.handlers == _ONLY_NULL
        and not _ROOT.handlers
        and _log.propagate
        and _log.parent is _ROOT
    )


class LoggingSink:
    """Each event as one JSON object on a standard logger, at the event's level; an event
    that no handler would write is not built (see ``_reaches_a_handler``)."""

    def __init__(self, logger: logging.Logger | None = None, *, min_level: int = logging.INFO):
        self.logger = logger or _log
        self.min_level = min_level

    def accepts(self, level: int) -> bool:
        logger = self.logger
        if _unconfigured(logger):
            return False
        return logger.isEnabledFor(level) and _reaches_a_handler(logger, level)

    def emit(self, event: Event) -> None:
        if self.accepts(event.level):
            text = json.dumps(event.to_dict(), sort_keys=True, default=str)
            self.logger.log(event.level, redact(text), extra={EVENT_NAME_ATTR: event.name})


class EventBus:
    """The sinks, and the lowest level any of them wants (``min_level``)."""

    def __init__(self, sinks: tuple[Sink, ...] = ()) -> None:
        self._lock = threading.Lock()
        self.sinks: tuple[Sink, ...] = ()
        self.min_level = logging.CRITICAL + 1
        self._only: LoggingSink | None = None
        self._set(sinks)

    def wants(self, level: int) -> bool:
        """Whether any sink would take an event of ``level``: build it only then."""
        if level < self.min_level:
            return False
        only = self._only
        if only is not None:  # the default: one logging sink, asked without the loop
            # ``silent`` first: in a program that configured no logging, one question.
            return level >= only.min_level and not self.silent() and only.accepts(level)
        for sink in self.sinks:  # noqa: SIM110 - asked on every failure: cheaper than any()
            if level >= sink.min_level and sink.accepts(level):
                return True
        return False

    def silent(self) -> bool:
        """Whether no sink would take an event of any level: no sinks, or only the default
        logging sink in a program that configured no logging. A caller with several events
        to offer asks this once instead of ``wants`` for each."""
        only = self._only
        if only is None:
            return not self.sinks
        return (  # ``_unconfigured(only.logger)``, inline: asked on every failure
            only.logger is _log
            and _log.handlers == _ONLY_NULL
            and not _ROOT.handlers
            and _log.propagate
            and _log.parent is _ROOT
        )

    def add(self, sink: Sink) -> None:
        with self._lock:
            self._set((*self.sinks, sink))

    def remove(self, sink: Sink) -> None:
        with self._lock:
            self._set(tuple(s for s in self.sinks if s is not sink))

    def _set(self, sinks: tuple[Sink, ...]) -> None:
        self._only = None  # first: a reader never sees it beside sinks it does not stand for
        self.sinks = sinks
        self.min_level = min((s.min_level for s in sinks), default=logging.CRITICAL + 1)
        if len(sinks) == 1 and type(sinks[0]) is LoggingSink:
            self._only = sinks[0]

    def emit(self, event: Event) -> None:
        for sink in self.sinks:
            if event.level >= sink.min_level:
                try:
                    sink.emit(event)
                except Exception:  # a broken sink must not break the call it observes
                    _log.exception("backstay: sink %r failed on %s", sink, event.name)


BUS = EventBus((LoggingSink(),))


def add_sink(sink: Sink) -> None:
    """Send every event at or above ``sink.min_level`` to ``sink`` from now on."""
    BUS.add(sink)


def remove_sink(sink: Sink) -> None:
    BUS.remove(sink)
