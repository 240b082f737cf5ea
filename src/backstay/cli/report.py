"""``backstay report``: the batch of a state directory as one self-contained HTML file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from backstay.cli import _faults, _records, _state
from backstay.cli._errors import usage_error
from backstay.errors import ConfigError
from backstay.observe.report import REPORT_FILE, write_report
from backstay.store.location import StoreKind
from backstay.store.sqlite.tasks import STATE_FILE


def report(
    state_dir: _state.StateDirOption,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help=f"The file to write (default: DIR/{REPORT_FILE})."),
    ] = None,
    store: _state.StoreOption = None,
    sets: _state.SetOption = None,
) -> None:
    """Write the HTML report of the batch in --state-dir and print its path.

    One file, no network needed to open it: the outcome, failures by kind, a timeline of
    attempts, waits and circuit changes, retries and waiting, tokens and cost, open
    escalations and every task's attempts with their evidence and links to their logs.
    Safe while the batch runs. Exit code 0, or 2 when --state-dir holds no batch or the
    file cannot be written.
    """
    try:
        location = _state.store_location(store, state_dir, sets=sets)
        if location.kind is StoreKind.SQLITE:
            _faults.using(state_dir, (location.path or state_dir) / STATE_FILE)
            if state_dir.is_dir():
                _records.check_recorded(state_dir, location.path)
        path = write_report(state_dir, output, location=location)
    except ConfigError as err:
        raise usage_error(err) from None
    except OSError as exc:
        raise usage_error(
            ConfigError(f"cannot write {exc.filename}: {exc.strerror or exc}", where="--output")
        ) from None
    typer.echo(str(path))
