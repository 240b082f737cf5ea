"""``backstay status``: where the batch of a state directory stands — its summary and
every task's state — as a table, or as JSON with ``--json``."""

from __future__ import annotations

import json
import sys

from backstay.cli import _state
from backstay.cli._errors import usage_error
from backstay.cli._report import console, print_summary, status_data, tasks_table
from backstay.engine import read_identity
from backstay.errors import ConfigError


def status(
    state_dir: _state.StateDirOption,
    as_json: _state.JsonOption = False,
    store: _state.StoreOption = None,
    sets: _state.SetOption = None,
) -> None:
    """The summary of the batch in --state-dir and the state of each of its tasks.

    Changes nothing; safe while the batch runs. Exit code 0, or 2 when --state-dir holds no
    batch (or a damaged one).
    """
    try:
        location = _state.store_location(store, state_dir, sets=sets)
        engine = _state.open_engine(state_dir, location=location)
        identity = read_identity(state_dir)
    except ConfigError as err:
        raise usage_error(err) from None
    with engine:
        summary = engine.summary()
        records = engine.store.tasks()
    if as_json:
        data = status_data(summary, records, state_dir=state_dir, identity=identity)
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    name = "" if identity is None else f" {identity.workflow_id}"
    print_summary(summary, state_dir=state_dir, title=f"backstay status{name} ({state_dir})")
    if records:
        console().print(tasks_table(records, title="tasks", summary=summary))
