"""``backstay health``: the readiness check ``/readyz`` serves, printed."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import typer

from backstay.cli import _faults, _records, _state
from backstay.cli._errors import usage_error
from backstay.errors import ConfigError
from backstay.observe.health import FAIL, PASS, STATE_FILE, HealthReport, health_check
from backstay.store.location import StoreKind, StoreLocation, StoreUnreachable

# Exit code when the check fails (the store takes no writes).
UNHEALTHY = 1


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
        if location.kind is StoreKind.REDIS:
            report = _shared_health(state_dir, location)
        else:
            store_dir = location.path or state_dir
            _faults.using(state_dir, store_dir / STATE_FILE)
            if state_dir.is_dir():
                _records.check_recorded(state_dir, location.path)
            report = health_check(store_dir)
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


def _shared_health(state_dir: Path, location: StoreLocation) -> HealthReport:
    """``/readyz`` of a batch in Redis: the store answers, then the batch's checks."""
    where = location.display
    try:
        report = health_check(state_dir, location=location)  # the counts: no task read
    except StoreUnreachable as err:
        check = {"status": FAIL, "componentId": where, "output": err.reason}
        return HealthReport(status=FAIL, checks={"store:reachable": (check,)})
    (circuits, *_) = report.checks["circuits:open"]
    store = {"status": PASS, "componentId": where, "time": circuits["time"]}
    return dataclasses.replace(report, checks={"store:reachable": (store,), **report.checks})
