"""Options several commands share that need nothing but typer to declare (a command that
only checks settings, ``suite check``, takes them without loading the engine)."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["ServePortOption", "SetOption"]

SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Override one configuration key, e.g. retry.policies.standard.max_attempts=5 "
        "(repeatable; the retry policy framework's camelCase keys work too).",
    ),
]
# ``batch`` and ``resume`` serve their batch with it; ``serve`` re-exports it. The variable
# is ``backstay.observe.server.TOKEN_ENV_VAR`` (tests/cli/test_startup.py holds them alike).
ServePortOption = Annotated[
    int | None,
    typer.Option(
        "--serve-port",
        min=0,
        max=65535,
        help="While the batch runs, serve /metrics, /healthz and /readyz on this port "
        "(127.0.0.1), as backstay serve does (with $BACKSTAY_SERVE_TOKEN as bearer token if "
        "set).",
    ),
]
