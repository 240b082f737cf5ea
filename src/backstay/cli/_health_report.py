"""``backstay health``'s report of a batch, made and written without typer: the command
prints it (``cli.health``), and so does the entry point's short path for ``health --json``
(``cli._health_probe``), byte for byte alike."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Final

from backstay.cli import _records
from backstay.observe.health import FAIL, PASS, HealthReport, health_check
from backstay.store.location import StoreKind, StoreLocation, StoreUnreachable

__all__ = ["UNHEALTHY", "as_json", "report_at"]

# Exit code when the check fails (the store takes no writes).
UNHEALTHY: Final = 1


def report_at(state_dir: Path, location: StoreLocation) -> HealthReport:
    """The readiness of the batch in ``state_dir`` with its state in ``location`` (the
    store in force); a ``ConfigError`` when there is no batch to check."""
    if location.kind is StoreKind.REDIS:
        return _shared_health(state_dir, location)
    if state_dir.is_dir():
        _records.check_recorded(state_dir, location.path)
    return health_check(location.path or state_dir)


def as_json(report: HealthReport) -> str:
    """``health --json``'s output."""
    return json.dumps(report.to_dict(), indent=2) + "\n"


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
