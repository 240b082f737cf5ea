"""``backstay health``: the readiness check ``/readyz`` serves, printed."""

from __future__ import annotations

import json
import sys

import typer

from backstay.cli import _faults, _records, _state
from backstay.cli._errors import usage_error
from backstay.errors import ConfigError
from backstay.observe.health import FAIL, health_check
from backstay.store.sqlite.tasks import STATE_FILE

# Exit code when the check fails (the store takes no writes).
UNHEALTHY = 1


def health(state_dir: _state.StateDirOption, as_json: _state.JsonOption = False) -> None:
    """Whether the batch in --state-dir is ready: its state file takes writes, which
    circuits are open, how many escalations wait. Exit code 0 for pass or warn, 1 for
    fail, 2 when --state-dir holds no batch."""
    try:
        _faults.using(state_dir, state_dir / STATE_FILE)
        if state_dir.is_dir():
            _records.check_recorded(state_dir)
        report = health_check(state_dir)
    except ConfigError as err:
        raise usage_error(err) from None
    if as_json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        typer.echo(f"status: {report.status}")
        for name, found in report.checks.items():
            for check in found:
                what = check.get("componentId") or check.get("observedValue", "")
                more = check.get("output", "")
                typer.echo(f"  {name:<18} {check['status']:<5} {what} {more}".rstrip())
    if report.status == FAIL:
        raise typer.Exit(UNHEALTHY)
