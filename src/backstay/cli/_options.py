"""Options several commands share that need nothing but typer to declare (a command that
only checks settings, ``suite check``, takes them without loading the engine)."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["SetOption"]

SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Override one configuration key, e.g. retry.policies.standard.max_attempts=5 "
        "(repeatable; the retry policy framework's camelCase keys work too).",
    ),
]
