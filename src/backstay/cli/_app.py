"""The typer application and the entry point (``backstay = backstay.cli:main``)."""

from __future__ import annotations

import typer

from backstay.cli._help_style import HELP_OPTIONS, apply
from backstay.cli._lazy import LazyCommands

apply()  # one style of help and errors for every command (cli/_help_style.py)

# The commands (backstay.cli._lazy.COMMANDS) load on first use: ``backstay --version`` and
# ``backstay --help`` import none of them.
app = typer.Typer(
    name="backstay",
    cls=LazyCommands,
    help="Keep AI agents standing when their providers fail.",
    no_args_is_help=True,
    context_settings=HELP_OPTIONS,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        # Read here, not at import: every other command would pay for the metadata read.
        from backstay._version import __version__  # noqa: PLC0415

        typer.echo(f"backstay {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Keep AI agents standing when their providers fail."""


def main() -> None:
    app()
