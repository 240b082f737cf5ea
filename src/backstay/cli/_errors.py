"""How a command reports bad input: every problem on stderr, exit code 2, no traceback."""

from __future__ import annotations

from typing import Final

import typer

from backstay.errors import ConfigError

USAGE_ERROR: Final = 2


def usage_error(err: ConfigError) -> typer.Exit:
    """Print ``err`` (each problem on one line, for grep and editors' jump-to-line) and
    return the exit to raise."""
    from rich.console import Console  # noqa: PLC0415 - rich only when there is an error
    from rich.markup import escape  # noqa: PLC0415

    Console(stderr=True, soft_wrap=True).print(
        f"[bold red]error:[/] {escape(str(err))}", highlight=False
    )
    return typer.Exit(USAGE_ERROR)
