"""Whether a state directory still holds the records its batch made: records that are
gone are never taken for an empty batch.

A batch leaves three things behind, in this order: ``batch.json`` (its identity, written
first), ``state.sqlite`` (its tasks, recorded before any of them runs), and then, once
its tasks are recorded, ``events.jsonl`` and each attempt's folder
``runs/<task>/<tier>/run_NN/attempt_N``. So ``batch.json`` with an event log or an
attempt's folder but no task in ``state.sqlite`` (emptied, deleted, or its ``-wal`` file
lost after a kill) means the records are gone; ``batch.json`` alone (a batch killed while
it first started) means none were made yet, and ``backstay batch`` starts it again. Both
checks only read: a missing or empty ``state.sqlite`` is never created or initialised.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Final

from backstay.engine.suite_batch import BATCH_FILE, read_identity
from backstay.errors import ConfigError
from backstay.events import EVENTS_FILE
from backstay.store.sqlite._peek import Peek, peek

if TYPE_CHECKING:
    from backstay.engine.suite_batch import BatchIdentity

__all__ = ["check_recorded", "check_startable"]

_TASKS_COMPONENT: Final = "tasks"
_ATTEMPT_DIRS: Final = "runs/*/*/run_*/attempt_*"


def trace_of_tasks(state_dir: Path) -> str | None:
    """What in ``state_dir`` shows that its batch recorded tasks, or ``None``."""
    if (state_dir / EVENTS_FILE).exists():
        return f"{EVENTS_FILE} exists"
    for attempt in state_dir.glob(_ATTEMPT_DIRS):
        return f"{attempt.relative_to(state_dir)} exists"
    return None


def _peek(db: Path) -> Peek | None:
    """``peek(db)``; ``None`` also when it cannot be read (opening it says why). A
    malformed page it reads (it counts every task) is raised: the commands that read
    only the counts and a few tasks would not come upon it: a ``ConfigError``."""
    try:
        return peek(db)
    except sqlite3.Error as exc:
        if getattr(exc, "sqlite_errorname", "").startswith("SQLITE_CORRUPT"):
            raise ConfigError(
                f"{db} is damaged ({exc}); backstay left it as it is: restore it from a "
                "copy, or run the suite again with a new --state-dir",
                where="--state-dir",
            ) from None
        return None


def _gone(db: Path, identity: BatchIdentity, what: str, trace: str) -> ConfigError:
    return ConfigError(
        f"{db} {what}, but batch {identity.workflow_id} recorded tasks there ({trace}): "
        f"its records are gone (state.sqlite emptied or deleted, or its -wal file lost "
        "after a kill). Nothing was changed and nothing was run: restore state.sqlite "
        "with its -wal file from a copy, or run the suite again with a new --state-dir",
        where="--state-dir",
    )


def _other_batch(db: Path, identity: BatchIdentity, found: Peek) -> ConfigError:
    held = ", ".join(sorted(found.workflows))
    return ConfigError(
        f"{db} holds the tasks of batch {held}, but {BATCH_FILE} names batch "
        f"{identity.workflow_id}: the two files are of different batches. Nothing was "
        "changed: give the suite a new --state-dir",
        where="--state-dir",
    )


def _restart_hint(state_dir: Path, identity: BatchIdentity) -> str:
    suite = identity.suite_file or "SUITE.yaml"
    return f"backstay batch {suite} --state-dir {state_dir} starts it again"


def check_recorded(state_dir: Path, store_dir: Path | None = None) -> None:
    """For a command that reads or continues the batch of ``state_dir`` (its
    ``state.sqlite`` in ``store_dir``, default ``state_dir``): a ``ConfigError`` when the
    records ``batch.json`` speaks of are gone, or when ``state.sqlite`` is missing, empty
    or holds no task table (it is never initialised here)."""
    db = (store_dir or state_dir) / _state_file()
    identity = read_identity(state_dir)
    found = _peek(db)
    if found is None:
        if identity is not None and not db.exists():
            trace = trace_of_tasks(state_dir)
            if trace is not None:
                raise _gone(db, identity, "does not exist", trace)
            raise ConfigError(
                f"{db} does not exist: batch {identity.workflow_id} was stopped before it "
                f"recorded anything; {_restart_hint(state_dir, identity)}",
                where="--state-dir",
            )
        return  # missing without batch.json, or unreadable: opening it says so
    if found.workflows:
        if identity is not None and identity.workflow_id not in found.workflows:
            raise _other_batch(db, identity, found)
        return
    trace = None if identity is None else trace_of_tasks(state_dir)
    what = "is empty (0 bytes)" if found.size == 0 else "holds no task"
    if identity is not None and trace is not None:
        raise _gone(db, identity, what, trace)
    if _TASKS_COMPONENT in found.components:
        return  # a batch stopped before its tasks were recorded: nothing to show
    hint = (
        "no batch ran there (start one with backstay batch)"
        if identity is None
        else f"batch {identity.workflow_id} was stopped before it recorded anything; "
        f"{_restart_hint(state_dir, identity)}"
    )
    raise ConfigError(f"{db} {what}: {hint}; it was left as it is", where="--state-dir")


def check_startable(state_dir: Path, store_dir: Path | None = None) -> None:
    """For ``backstay batch`` on ``state_dir``, before it writes anything: a
    ``ConfigError`` when ``state.sqlite`` holds a batch that ``batch.json`` does not name
    (it was deleted: ``backstay batch`` would start a second one), or when the records
    ``batch.json`` speaks of are gone (it would run every task again)."""
    db = (store_dir or state_dir) / _state_file()
    identity = read_identity(state_dir)
    found = _peek(db)
    if found is not None and found.workflows:
        if identity is None:
            held = ", ".join(f"{name} ({n} tasks)" for name, n in sorted(found.workflows.items()))
            raise ConfigError(
                f"{db} holds batch {held}, but {state_dir / BATCH_FILE} is missing: "
                "running the suite here would start a second batch beside it. Nothing was "
                f"changed: backstay resume --state-dir {state_dir} continues the batch "
                "there, or give the suite a new --state-dir",
                where="--state-dir",
            )
        if identity.workflow_id not in found.workflows:
            raise _other_batch(db, identity, found)
        return
    if identity is None:
        return
    trace = trace_of_tasks(state_dir)
    if trace is None:
        return  # stopped while it first started: starting it again is right
    if found is None and not db.exists():
        raise _gone(db, identity, "does not exist", trace)
    if found is not None:
        raise _gone(
            db, identity, "is empty (0 bytes)" if found.size == 0 else "holds no task", trace
        )


def _state_file() -> str:
    """``STATE_FILE``, the SQLite store's file name, as ``observe.health`` names it (the
    task store's module, which loads the engine's records, is not imported for a name:
    tests/cli/test_startup.py holds the two alike)."""
    from backstay.observe.health import STATE_FILE  # noqa: PLC0415 - see above

    return STATE_FILE
