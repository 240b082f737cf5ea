"""``ExportWatch``: telemetry never slows the work, nor fills the terminal.

The OTLP exporters retry an endpoint that does not answer, with growing waits (about
half a minute by default), and log each retry. backstay's own exporters (those
``otel_setup`` makes) are watched instead:

* the exporters' and the SDK export helpers' log records are dropped; the first failure
  they report becomes ONE warning line naming the endpoint (``warn``), and from then on
  the endpoint counts as down;
* at exit the flush and shutdown run on a helper thread that is waited for at most
  ``EXIT_WAIT_S`` once the endpoint is down (``FLUSH_WAIT_S`` while it may still answer):
  what is not exported by then is dropped, never waited for.

Nothing here touches an application's own providers, exporters or loggers.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Final

__all__ = ["EXIT_WAIT_S", "FLUSH_WAIT_S", "ExportWatch", "finish_within"]

# The longest an exit waits for the exporters once their endpoint failed.
EXIT_WAIT_S: Final = 1.0
# The longest an exit waits for them while none failed (a slow collector still answers).
FLUSH_WAIT_S: Final = 10.0
_POLL_S: Final = 0.05
# The loggers the OTLP/HTTP exporters and the SDK's export helpers write to.
EXPORT_LOGGERS: Final = (
    "opentelemetry.exporter.otlp.proto.http",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.http._common",
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.sdk.trace.export",
    "opentelemetry.sdk._shared_internal",
    "opentelemetry.sdk.metrics._internal.export",
)


class ExportWatch(logging.Filter):
    """Drops the exporters' log records while installed; the first warning or error among
    them is reported once through ``warn`` and marks the endpoint ``down``."""

    def __init__(self, endpoint: str, warn: Callable[[str], None]) -> None:
        super().__init__()
        self.endpoint = endpoint
        self._warn = warn
        self._lock = threading.Lock()
        self.down = False

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            with self._lock:
                first, self.down = not self.down, True
            if first:
                self._warn(
                    f"warning: OpenTelemetry export to {self.endpoint} failed; the batch goes "
                    "on, and what it could not export is dropped"
                )
        return False

    def install(self) -> None:
        for name in EXPORT_LOGGERS:
            logging.getLogger(name).addFilter(self)

    def remove(self) -> None:
        for name in EXPORT_LOGGERS:
            logging.getLogger(name).removeFilter(self)


def finish_within(work: Callable[[], None], watch: ExportWatch | None) -> bool:
    """Run ``work`` (flush, shut down) on a daemon thread; wait for it at most
    ``EXIT_WAIT_S`` once ``watch`` saw the endpoint fail, else until it is done (at most
    ``FLUSH_WAIT_S``). Whether it finished; a thread left behind dies with the process."""
    thread = threading.Thread(target=_quietly(work), name="backstay-otel-exit", daemon=True)
    thread.start()
    started = time.monotonic()
    while thread.is_alive():
        down = watch is not None and watch.down
        if time.monotonic() - started >= (EXIT_WAIT_S if down else FLUSH_WAIT_S):
            return False
        thread.join(_POLL_S)
    return True


def _quietly(work: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        with contextlib.suppress(Exception):  # an exporter's failure never fails the batch
            work()

    return run
