"""What watches a batch while ``batch`` or ``resume`` runs it: the metrics server
(``--serve-port``) and OpenTelemetry export (``observe.otel`` of the configuration and the
``OTEL_*`` variables)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from backstay.cli._errors import usage_error
from backstay.cli._state import say
from backstay.errors import ConfigError
from backstay.events import add_sink, remove_sink

if TYPE_CHECKING:
    from backstay.config._otel import OtelSettings
    from backstay.store.location import StoreLocation


@contextlib.contextmanager
def observed(
    state_dir: Path,
    serve_port: int | None,
    otel: OtelSettings | None = None,
    location: StoreLocation | None = None,
) -> Iterator[None]:
    """Serve metrics of the batch (in ``location``: default ``state_dir``) on
    ``serve_port`` (if given) and export to OpenTelemetry (if ``otel`` or the environment
    asks for it) during the block; the spans are flushed when it ends."""
    from backstay.cli.serve import serving_while  # noqa: PLC0415 - when a batch runs
    from backstay.observe.otel_setup import otel_sink  # noqa: PLC0415

    try:
        sink = otel_sink(otel, warn=say)
    except ConfigError as err:
        raise usage_error(err) from None
    with serving_while(state_dir, serve_port, location):
        if sink is None:
            yield
            return
        add_sink(sink)
        try:
            yield
        finally:
            remove_sink(sink)
            sink.close()
