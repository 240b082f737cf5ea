"""``backstay serve``: the metrics and health of a batch over HTTP, for a batch that runs
(in another process, on this machine or, with a Redis store, on any) or has finished."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from backstay.cli import _options, _state
from backstay.cli._errors import usage_error
from backstay.errors import ConfigError
from backstay.events import add_sink, remove_sink
from backstay.observe.live import LiveCounters
from backstay.observe.server import DEFAULT_HOST, TOKEN_ENV_VAR, MetricsServer, loopback_only
from backstay.store.location import StoreLocation

PortOption = Annotated[
    int,
    typer.Option("--port", min=0, max=65535, help="The port to serve on (0: any free one)."),
]
HostOption = Annotated[
    str,
    typer.Option(
        "--host",
        help="The address to serve on (loopback by default). Any other needs a bearer "
        "token (--token-env) or --allow-unauthenticated.",
    ),
]
TokenEnvOption = Annotated[
    str | None,
    typer.Option(
        "--token-env",
        metavar="NAME",
        help="The environment variable holding the bearer token every request must carry "
        f"(Authorization: Bearer TOKEN; 401 otherwise). Default: ${TOKEN_ENV_VAR} if set, "
        "else no token.",
    ),
]
AllowUnauthenticatedOption = Annotated[
    bool,
    typer.Option(
        "--allow-unauthenticated",
        help="Serve on a non-loopback --host without a token: anyone who reaches the port "
        "reads the batch's metrics and health (a warning is printed).",
    ),
]


def serve_token(token_env: str | None, environ: Mapping[str, str]) -> str | None:
    """The bearer token: from the variable ``token_env`` names (which must hold one), else
    from ``$BACKSTAY_SERVE_TOKEN`` when set and not empty, else none."""
    if token_env is None:
        return environ.get(TOKEN_ENV_VAR, "").strip() or None
    if not token_env.strip():
        raise ConfigError("names no variable", where="--token-env")
    value = environ.get(token_env, "").strip()
    if not value:
        raise ConfigError(
            f"${token_env} is not set or empty: it must hold the bearer token",
            where="--token-env",
        )
    return value


def open_server(
    state_dir: Path,
    *,
    host: str,
    port: int,
    location: StoreLocation | None = None,
    token: str | None = None,
    require_batch: bool = True,
) -> MetricsServer:
    """The server, or a usage error naming what is wrong (no batch there, port taken)."""
    try:
        return MetricsServer(
            state_dir,
            host=host,
            port=port,
            location=location,
            token=token,
            require_batch=require_batch,
        )
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
    store: _state.StoreOption = None,
    token_env: TokenEnvOption = None,
    allow_unauthenticated: AllowUnauthenticatedOption = False,
) -> None:
    """Serve /metrics (Prometheus), /healthz (liveness) and /readyz (readiness, as
    application/health+json) for the batch in --state-dir (or in --store), until Ctrl-C
    or SIGTERM.

    Every scrape reads the batch afresh: it may serve a batch that runs in another process,
    or one that has finished. Loopback only unless --host says otherwise, which needs a
    bearer token (--token-env, $BACKSTAY_SERVE_TOKEN) or --allow-unauthenticated. Exit
    code 0, or 2 when there is no batch, the port cannot be used or the token is missing.
    """
    try:
        token = serve_token(token_env, os.environ)
        location = _state.store_location(store, state_dir)
    except ConfigError as err:
        raise usage_error(err) from None
    unguarded = token is None and not loopback_only(host)
    if unguarded and not allow_unauthenticated:
        raise usage_error(
            ConfigError(
                f"{host} is reachable beyond this machine and the server has no token: "
                f"set one (--token-env NAME, or ${TOKEN_ENV_VAR}) or pass "
                "--allow-unauthenticated",
                where="--host",
            )
        )
    server = open_server(state_dir, host=host, port=port, location=location, token=token)
    if unguarded:
        typer.echo(
            f"warning: serving on {host} without authentication: anyone who reaches port "
            f"{server.port} reads this batch's metrics and health",
            err=True,
        )
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, _stop)
    with server:
        guarded = " (bearer token required)" if token is not None else ""
        typer.echo(
            f"serving {location.display} on {server.url}/metrics, /healthz, /readyz{guarded}",
            err=True,
        )
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)


ServePortOption = _options.ServePortOption


@contextlib.contextmanager
def serving_while(
    state_dir: Path, port: int | None, location: StoreLocation | None = None
) -> Iterator[None]:
    """Serve the batch of ``state_dir`` (or of ``location``), with this process's live
    counts, on 127.0.0.1:``port`` during the block; nothing when ``port`` is None."""
    if port is None:
        yield
        return
    token = serve_token(None, os.environ)
    live = LiveCounters()
    server = open_server(
        state_dir,
        host=DEFAULT_HOST,
        port=port,
        location=location,
        token=token,
        require_batch=False,
    )
    add_sink(live)
    server.live = live
    try:
        with server:
            typer.echo(f"serving metrics on {server.url}/metrics", err=True)
            yield
    finally:
        remove_sink(live)
