"""``backstay config``: check a configuration file, show the effective configuration and
where each value came from, print the file's JSON Schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from backstay.config import BackstayConfig, config_schema, load_config
from backstay.errors import ConfigError

USAGE_ERROR = 2

app = typer.Typer(
    name="config",
    help="Check and show backstay's configuration (backstay.yaml).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _fail(err: ConfigError) -> typer.Exit:
    # No wrapping: each problem stays on one line, for grep and for editors' jump-to-line.
    Console(stderr=True, soft_wrap=True).print(
        f"[bold red]error:[/] {escape(str(err))}", highlight=False
    )
    return typer.Exit(USAGE_ERROR)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def summary(config: BackstayConfig) -> str:
    """One line: what the configuration holds."""
    registry = config.registry
    changed = [n for n in registry.names() if not registry.describe(n)["builtin"]]
    operations = ", ".join(f"{op} → {name}" for op, name in registry.operation_policies.items())
    parts = [
        f"{len(registry)} policies ({len(changed)} defined or changed here)",
        f"default {registry.default_policy!r}",
        f"operations: {operations or 'all use the default'}",
    ]
    for name, size, unit in (
        ("circuit_breaker", len(config.circuit_breaker), "setting"),
        ("budget", len(config.budget), "setting"),
        ("rate_limits", len(config.rate_limits), "limit"),
    ):
        if size:
            parts.append(f"{name}: {size} {unit}{'' if size == 1 else 's'}")
    return "; ".join(parts)


def check(
    file: Annotated[Path, typer.Argument(help="The configuration file to check.")],
) -> None:
    """Check FILE (environment overrides are not applied): OK, or every problem in it."""
    try:
        config = load_config(file, environ={})
    except ConfigError as err:
        raise _fail(err) from None
    typer.echo(f"OK {file}: {summary(config)}")


def show(
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="The file to read (default: $BACKSTAY_CONFIG, else ./backstay.yaml if any).",
        ),
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Override one key, e.g. retry.policies.standard.max_attempts=5 (repeatable).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The effective configuration, each value with where it came from."""
    try:
        config = load_config(config_file, overrides=sets or [])
    except ConfigError as err:
        raise _fail(err) from None
    if as_json:
        sys.stdout.write(json.dumps(config.to_dict(), indent=2, default=str) + "\n")
        return
    origin = str(config.file) if config.file is not None else "no file: built-in defaults"
    table = Table(title=f"backstay config ({origin})", title_justify="left")
    for column in ("key", "value", "source"):
        table.add_column(column, overflow="fold")
    for key, value in config.effective.items():
        table.add_row(escape(key), escape(_text(value.value)), escape(str(value.source)))
    console = Console() if sys.stdout.isatty() else Console(width=200)
    console.print(table)


def schema() -> None:
    """The JSON Schema of the configuration file (docs/config.schema.json)."""
    sys.stdout.write(json.dumps(config_schema(), indent=2) + "\n")


app.command("check")(check)
app.command("show")(show)
app.command("schema")(schema)
