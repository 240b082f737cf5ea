"""``backstay health``: the readiness check ``/readyz`` serves, printed.

``backstay health --json`` with its flags given plainly is answered by the entry point
before typer is imported (``cli._health_probe``); this command answers every other form,
and the short path's errors, with the same report (``cli._health_report``)."""

from __future__ import annotations

import sys

import typer

from backstay.cli import _faults, _health_report, _state
from backstay.cli._errors import usage_error
from backstay.cli._health_report import UNHEALTHY, report_at
from backstay.errors import ConfigError
from backstay.observe.health import FAIL, STATE_FILE
from backstay.store.location import StoreKind

__all__ = ["UNHEALTHY", "health"]


def health(
    state_dir: _state.StateDirOption,
    as_json: _state.JsonOption = False,
    store: _state.StoreOption = None,
    sets: _state.SetOption = None,
) -> None:
    """Whether the batch in --state-dir is ready: its state file takes writes, which
    circuits are open, how many escalations wait, how many tasks were interrupted (no
    process runs them). Exit code 0 for pass or warn, 1 for fail, 2 when --state-dir
    holds no batch."""
    try:
        location = _state.store_location(store, state_dir, sets=sets)
        if location.kind is not StoreKind.REDIS:
            _faults.using(state_dir, (location.path or state_dir) / STATE_FILE)
        report = report_at(state_dir, location)
    except ConfigError as err:
        raise usage_error(err) from None
    if as_json:
        sys.stdout.write(_health_report.as_json(report))
    else:
        typer.echo(f"status: {report.status}")
        for name, found in report.checks.items():
            for check in found:
                what = check.get("componentId") or check.get("observedValue", "")
                more = check.get("output", "")
                typer.echo(f"  {name:<18} {check['status']:<5} {what} {more}".rstrip())
    if report.status == FAIL:
        raise typer.Exit(UNHEALTHY)
