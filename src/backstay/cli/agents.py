"""``backstay agents install | list``: the real agent CLIs backstay drives, installed at
pinned versions into a managed directory, and where each one stands."""

from __future__ import annotations

import json
import shlex
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Final

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from backstay.agents import (
    AGENTS_DIR_ENV_VAR,
    CLIS,
    DEFAULT_JOBS,
    CliState,
    CliStatus,
    InstallResult,
    InstallStarted,
    agents_dir,
    cli_spec,
    cli_status,
    install,
)
from backstay.cli._errors import usage_error
from backstay.cli._report import console
from backstay.errors import ConfigError
from backstay.redact import redact

app = typer.Typer(
    name="agents",
    help="Install the agent CLIs at known-good versions, and see where each one stands.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Exit codes of `install` (docs/cli.md); 2 is bad usage, as for every command.
ALL_INSTALLED: Final = 0
SOME_FAILED: Final = 3
INTERRUPTED: Final = 130

DirOption = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        help=f"The managed directory (default: ${AGENTS_DIR_ENV_VAR}, else "
        "$XDG_CACHE_HOME/backstay/agents or ~/.cache/backstay/agents).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _root(directory: Path | None) -> Path:
    try:
        return agents_dir(directory)
    except ConfigError as err:
        raise usage_error(err) from None


def _names(names: list[str] | None) -> list[str]:
    chosen = names or list(CLIS)
    for name in chosen:
        try:
            cli_spec(name, where="NAME")
        except ConfigError as err:
            raise usage_error(err) from None
    if len(set(chosen)) != len(chosen):
        raise usage_error(ConfigError(f"names a CLI twice: {' '.join(chosen)}", where="NAME"))
    return chosen


def install_command(
    names: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[NAME]...", help=f"CLIs to install (default: all of {', '.join(CLIS)})."
        ),
    ] = None,
    directory: DirOption = None,
    force: Annotated[
        bool, typer.Option("--force", help="Install again even what is installed and intact.")
    ] = False,
    jobs: Annotated[
        int, typer.Option("--jobs", min=1, help="How many CLIs install at once.")
    ] = DEFAULT_JOBS,
    python: Annotated[
        str | None,
        typer.Option(
            "--python",
            help="The Python that creates the virtual environments of PyPI CLIs "
            "(default: the one running backstay).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Install the pinned version of each CLI into the managed directory.

    What is installed at the pinned version and intact is left alone (a warm run takes
    well under a second); a changed pin or a broken install is installed again. Exit code
    0 when every CLI is installed, 3 when some could not be (each named on stderr with the
    failed command and what to do), 2 for bad usage, 130 when interrupted.
    """
    chosen = _names(names)
    root = _root(directory)
    lock, started = threading.Lock(), time.monotonic()
    err = Console(stderr=True, soft_wrap=True)

    def report(event: InstallStarted | InstallResult) -> None:
        if as_json:
            return
        with lock:
            clock = f"[{time.monotonic() - started:5.1f}s]"
            if isinstance(event, InstallStarted):
                err.print(
                    f"{clock} {event.name}: installing {event.version} ({escape(event.reason)})",
                    highlight=False,
                )
            elif event.ok:
                err.print(
                    f"{clock} {event.name}: {event.status} {event.version} "
                    f"({event.duration_s:.1f} s) {escape(str(event.binary))}",
                    highlight=False,
                )
            else:
                err.print(
                    f"{clock} [bold red]{event.name}: failed[/] — "
                    f"{escape(redact(event.problem or ''))} (log: {escape(str(event.log))})",
                    highlight=False,
                )

    try:
        results = install(
            [CLIS[name] for name in chosen],
            root=root,
            force=force,
            jobs=jobs,
            python=python,
            report=report,
        )
    except ConfigError as error:
        raise usage_error(error) from None
    except KeyboardInterrupt:
        err.print("interrupted: the installs under way were stopped", highlight=False)
        raise typer.Exit(INTERRUPTED) from None
    failed = [r for r in results if not r.ok]
    if as_json:
        data = {
            "dir": str(root),
            "results": [
                {
                    "name": r.name,
                    "status": str(r.status),
                    "version": r.version,
                    "binary": str(r.binary) if r.binary else None,
                    "duration_s": round(r.duration_s, 3),
                    "reason": r.reason,
                    "problem": redact(r.problem) if r.problem else None,
                    "log": str(r.log) if r.log else None,
                }
                for r in results
            ],
        }
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        summary = f"{len(results) - len(failed)} of {len(results)} agent CLIs installed in {root}"
        err.print(summary, highlight=False)
    if failed:
        raise typer.Exit(SOME_FAILED)


def _row(status: CliStatus) -> list[str]:
    located = status.located
    where = "-" if located is None else f"{located.source}: {located.path}"
    state = str(status.state)
    if status.state is CliState.OK and status.managed_version != status.spec.pinned:
        state = f"ok (pinned {status.spec.pinned} not installed)"
    return [
        status.spec.name,
        ", ".join(status.spec.supported),
        status.managed_version or "-",
        "-" if located is None else located.version,
        where,
        state,
    ]


def list_command(
    directory: DirOption = None,
    binaries: Annotated[
        list[str] | None,
        typer.Option(
            "--binary",
            metavar="NAME=PATH",
            help="Check this configured path for CLI NAME instead of looking for it (repeatable).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Each known CLI: the versions backstay supports, the version installed in the
    managed directory, the binary an adapter would run (from a configured path, the
    managed directory or PATH) and its status. Exit code 0, or 2 for bad usage.
    """
    root = _root(directory)
    configured: dict[str, str] = {}
    for item in binaries or []:
        name, sep, path = item.partition("=")
        if not sep or not path:
            raise usage_error(ConfigError(f"must be NAME=PATH, got {item!r}", where="--binary"))
        try:
            cli_spec(name, where="--binary")
        except ConfigError as error:
            raise usage_error(error) from None
        configured[name] = path
    statuses = [
        cli_status(spec, root=root, configured_path=configured.get(spec.name))
        for spec in CLIS.values()
    ]
    if as_json:
        data = {"dir": str(root), "clis": [s.to_dict() for s in statuses]}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    table = Table(title=f"agent CLIs (managed directory: {root})", title_justify="left")
    for column in ("cli", "supported", "managed", "found", "where", "status"):
        table.add_column(column, overflow="fold")
    for status in statuses:
        table.add_row(*(escape(cell) for cell in _row(status)))
    console().print(table)
    for status in statuses:
        if status.state is not CliState.OK:
            # The same directory as this listing's: the install hint names it too.
            where = "" if directory is None else f" --dir {shlex.quote(str(directory))}"
            hint = f"run `{status.spec.install_hint}{where}`"
            console().print(
                f"{status.spec.name}: {status.state} ({escape('; '.join(status.notes))}): {hint}",
                highlight=False,
            )


app.command("install")(install_command)
app.command("list")(list_command)
