"""The typer application and the entry point (``backstay = backstay.cli:main``)."""

from __future__ import annotations

import typer

from backstay import __version__
from backstay.cli import (
    agents,
    batch,
    config,
    demo,
    escalations,
    events,
    explain,
    fake_provider,
    gateway,
    health,
    report,
    resume,
    run,
    serve,
    status,
    suite,
)
from backstay.cli._faults import FaultGuard
from backstay.cli._provider_env import ProviderHelpCommand

app = typer.Typer(
    name="backstay",
    cls=FaultGuard,
    help="Keep AI agents standing when their providers fail.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"backstay {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Keep AI agents standing when their providers fail."""


app.command("explain")(explain.explain)
app.add_typer(config.app, name="config")
app.add_typer(suite.app, name="suite")
app.command("run", cls=ProviderHelpCommand)(run.run)
app.command("batch", cls=ProviderHelpCommand)(batch.batch)
app.command("resume")(resume.resume)
app.command("status")(status.status)
app.command("events")(events.events)
app.command("serve")(serve.serve)
app.command("health")(health.health)
app.command("report")(report.report)
app.add_typer(escalations.app, name="escalations")
app.add_typer(fake_provider.app, name="fake-provider")
app.command("gateway")(gateway.gateway)
app.add_typer(agents.app, name="agents")
app.command("demo")(demo.demo)


def main() -> None:
    app()
