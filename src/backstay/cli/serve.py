"""``backstay serve``: the metrics and health of a state directory over HTTP, for a batch
that runs (in another process) or has finished."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from backstay.cli import _state
from backstay.cli._errors import usage_error
from backstay.errors import ConfigError
from backstay.observe import add_sink, remove_sink
from backstay.observe.live import LiveCounters
from backstay.observe.server import DEFAULT_HOST, MetricsServer

PortOption = Annotated[
    int,
    typer.Option("--port", min=0, max=65535, help="The port to serve on (0: any free one)."),
]
HostOption = Annotated[
    str, typer.Option("--host", help="The address to serve on (loopback by default).")
]


def open_server(state_dir: Path, *, host: str, port: int) -> MetricsServer:
    """The server, or a usage error naming what is wrong (no batch there, port taken)."""
    try:
        return MetricsServer(state_dir, host=host, port=port)
    except ConfigError as err:
        raise usage_error(err) from None
    except OSError as exc:
        raise usage_error(
            ConfigError(f"cannot serve on {host}:{port}: {exc.strerror or exc}", where="--port")
        ) from None


def serve(
    state_dir: _state.StateDirOption,
    port: PortOption = 9464,
    host: HostOption = DEFAULT_HOST,
) -> None:
    """Serve /metrics (Prometheus), /healthz (liveness) and /readyz (readiness, as
    application/health+json) for the batch in --state-dir, until Ctrl-C or SIGTERM.

    Every scrape reads the state directory afresh: it may serve a batch that runs in
    another process, or one that has finished. Exit code 0, or 2 when --state-dir holds
    no batch or the port cannot be used.
    """
    server = open_server(state_dir, host=host, port=port)
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, _stop)
    with server:
        typer.echo(f"serving {state_dir} on {server.url}/metrics, /healthz, /readyz", err=True)
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)


ServePortOption = Annotated[
    int | None,
    typer.Option(
        "--serve-port",
        min=0,
        max=65535,
        help="While the batch runs, serve /metrics, /healthz and /readyz on this port "
        "(127.0.0.1), as backstay serve does.",
    ),
]


@contextlib.contextmanager
def serving_while(state_dir: Path, port: int | None) -> Iterator[None]:
    """Serve ``state_dir`` (with this process's live counts) on ``port`` during the block;
    nothing when ``port`` is None."""
    if port is None:
        yield
        return
    live = LiveCounters()
    server = open_server(state_dir, host=DEFAULT_HOST, port=port)
    add_sink(live)
    server.live = live
    try:
        with server:
            typer.echo(f"serving metrics on {server.url}/metrics", err=True)
            yield
    finally:
        remove_sink(live)
