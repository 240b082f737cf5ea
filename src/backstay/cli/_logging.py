"""The CLI's default for the ``backstay`` logger: when nothing is configured, the events
the retry policy framework asks to see (an attempt's failure at WARNING, a final failure
at ERROR) reach stderr, redacted like every line the logging sink writes.

A library logs nothing unless its application configures logging (``backstay.observe``
gives its logger a ``NullHandler``); the CLI is the application. It adds its handler only
when nobody configured any (the root logger and the ``backstay`` logger have no handler of
their own beyond that ``NullHandler``), and leaves out the events a command already prints
(``backstay run`` prints the run's final failure itself).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import Final

from backstay.events.bus import EVENT_NAME_ATTR

__all__ = ["apply_log_level", "failures_on_stderr"]

_LOGGER: Final = logging.getLogger("backstay")
_FORMAT: Final = "backstay: %(levelname)s: %(message)s"


def _configured() -> bool:
    own = [h for h in _LOGGER.handlers if not isinstance(h, logging.NullHandler)]
    return bool(own or logging.getLogger().handlers)


class _Skip(logging.Filter):
    def __init__(self, names: frozenset[str]) -> None:
        super().__init__()
        self.names = names

    def filter(self, record: logging.LogRecord) -> bool:
        return getattr(record, EVENT_NAME_ATTR, None) not in self.names


@contextlib.contextmanager
def failures_on_stderr(*, printed: frozenset[str] = frozenset()) -> Iterator[None]:
    """During the block, WARNING and above from the ``backstay`` logger on stderr, unless
    logging is configured; events named in ``printed`` are left out (already shown)."""
    if _configured():
        yield
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.addFilter(_Skip(printed))
    _LOGGER.addHandler(handler)
    try:
        yield
    finally:
        _LOGGER.removeHandler(handler)


def apply_log_level(level: str | None) -> None:
    """The configuration's ``observe.log_level`` as the ``backstay`` logger's level (for
    the process the command runs in); nothing when it is not given."""
    if level is not None:
        _LOGGER.setLevel(level)
