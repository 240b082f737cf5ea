"""The state directory the engine commands share: its flags, opening it, and the exit code
a batch's summary comes to."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from backstay._private import make_private_dirs
from backstay.cli import _faults, _options, _records, _store_in_force
from backstay.cli._errors import usage_error
from backstay.engine.states import TERMINAL, TaskState
from backstay.engine.suite_batch import BATCH_FILE, read_identity
from backstay.errors import ConfigError
from backstay.idempotency.settings import DEFAULT_LEASE_TTL_S, GuardSettings
from backstay.store.location import (
    STORE_ENV_VAR,
    StoreKind,
    StoreLocation,
    StoreUnreachable,
)

# The engine, the stores and the configuration are imported where a command uses them,
# not when it is loaded: its --help pays for none of them (tests/cli/test_startup.py).
if TYPE_CHECKING:
    from backstay.engine.runner import Engine
    from backstay.engine.stores import StoreBundle
    from backstay.engine.summary import Summary
    from backstay.policy.spend import SpendBudget

# Exit codes of `batch` and `resume` (docs/cli.md); 2 is bad usage, as for every command.
ALL_SUCCEEDED: Final = 0
SOME_FAILED: Final = 3
SOME_WAITING: Final = 4
BUDGET_REACHED: Final = 5
# The shared store stopped answering during the batch (``store_unavailable: stop``).
STORE_UNREACHABLE: Final = _faults.STORE_UNREACHABLE
# The file system refused a read or write of the state directory (full, read-only, …).
FILE_SYSTEM_FAULT: Final = _faults.FILE_SYSTEM_FAULT

# Where --state-dir is read from when the flag is not given.
STATE_DIR_ENV_VAR: Final = _store_in_force.STATE_DIR_ENV_VAR
StateDirOption = Annotated[
    Path,
    typer.Option(
        "--state-dir",
        envvar=STATE_DIR_ENV_VAR,
        show_envvar=False,
        help="The batch's state directory (state.sqlite, batch.json and runs/); "
        f"default: ${STATE_DIR_ENV_VAR}.",
    ),
]
ConcurrencyOption = Annotated[
    int,
    typer.Option("--concurrency", min=1, help="How many tasks run at once."),
]
LeaseOption = Annotated[
    float,
    typer.Option(
        "--lease-ttl",
        min=0.1,
        help="Seconds a task stays claimed by this runner if it dies: another runner "
        "(a resume) takes it over after that.",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="URL",
        help="Where the batch state lives: redis://host:port/db (rediss:// for TLS; "
        "?namespace=NAME, &cluster=yes for a Redis Cluster) shared by every machine, or a "
        "directory (SQLite). Default: "
        f"${STORE_ENV_VAR}, else store: in backstay.yaml, else --state-dir.",
    ),
]
BudgetUsdOption = Annotated[
    float | None,
    typer.Option(
        "--budget-usd",
        min=0.0,
        help="The batch's budget in US dollars: no attempt starts that its estimate does not "
        "fit in (kept in the state directory; replaces the suite's).",
    ),
]
BudgetTokensOption = Annotated[
    int | None,
    typer.Option(
        "--budget-tokens",
        min=0,
        help="The batch's budget in tokens, prompt and output (kept as --budget-usd is).",
    ),
]

DEFAULT_LEASE_TTL: Final = DEFAULT_LEASE_TTL_S
# SQLite's answers when another connection holds the lock a statement needs.
_CONTENTION: Final = frozenset({"SQLITE_BUSY", "SQLITE_LOCKED"})
# As a shell reports a process ended by Ctrl-C (SIGINT).
INTERRUPTED: Final = 130


# ``--set KEY=VALUE`` on every command that loads the configuration.
SetOption = _options.SetOption


# A batch's own files: batch.json, the SQLite store's file (``STATE_FILE``), its events.
_BATCH_FILES: Final = (BATCH_FILE, "state.sqlite", "events.jsonl", "runs")
AllowNonEmptyOption = Annotated[
    bool,
    typer.Option(
        "--allow-non-empty",
        help="Start the batch in a --state-dir that holds other files (by default a "
        "directory that is not empty and holds no batch is refused).",
    ),
]


def check_fresh(state_dir: Path, *, allow: bool = False) -> None:
    """Before a batch starts in ``state_dir``: a ``ConfigError`` when the directory holds
    files but none of a batch's (``batch.json``, the state file, ``events.jsonl``,
    ``runs/``), unless ``allow``; a batch there is continued, a new or empty directory is
    used."""
    if allow or not state_dir.is_dir():
        return
    # A batch's own files, even of a damaged batch (the records checks name what is amiss).
    if any((state_dir / name).exists() for name in _BATCH_FILES):
        return
    try:
        found = sorted(entry.name for entry in state_dir.iterdir())
    except OSError:
        return  # unreadable: opening the batch there says so
    if found:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise ConfigError(
            f"{state_dir} is not empty ({shown}) and holds no batch: backstay would add "
            "batch.json, state.sqlite and runs/ beside those files. Nothing was written: "
            "give a new or empty directory, or --allow-non-empty to use this one",
            where="--state-dir",
        )


def check_not_a_file(state_dir: Path) -> None:
    """A ``ConfigError`` if ``state_dir`` exists and is not a directory."""
    if state_dir.exists() and not state_dir.is_dir():
        raise ConfigError(f"{state_dir} is a file, not a state directory", where="--state-dir")


# The store in force, found without typer (``cli._store_in_force``: ``health --json``'s
# short path uses it before the command line is built).
store_location = _store_in_force.store_location
configured = _store_in_force.configured
# In a store recorded in batch.json, a password that was left out.
_MASK: Final = _store_in_force.MASK


def recorded_store(location: StoreLocation, state_dir: Path) -> str | None:
    """What ``batch.json`` keeps of ``location``: ``None`` for SQLite in ``state_dir``
    itself, else the location without its password (``display``)."""
    if location.kind is StoreKind.SQLITE:
        path = location.path
        same = path is None or Path(path).absolute() == Path(state_dir).absolute()
        return None if same else str(Path(path or state_dir).absolute())
    return location.display


def open_engine(
    state_dir: Path,
    *,
    create: bool = False,
    location: StoreLocation | None = None,
    **options: Any,
) -> Engine:
    """The engine over ``state_dir`` (its state in ``location``: default SQLite there).
    Unless ``create``, the state must already hold a batch; a missing, unusable or damaged
    one, or one whose records are gone (``_records.check_recorded``), is a ``ConfigError``
    naming it."""
    from backstay.engine.runner import Engine  # noqa: PLC0415 - see the imports

    if location is not None and location.kind is StoreKind.REDIS:
        _faults.using(state_dir, location.display)
        return _open_shared(state_dir, location, create=create, **options)
    store_dir = _sqlite_store_dir(state_dir, location, create=create)
    with _opening(store_dir):
        return Engine(store_dir, **options)


def open_batch_stores(state_dir: Path, *, location: StoreLocation | None = None) -> StoreBundle:
    """The stores ``open_engine(state_dir, location=location)`` would run on, opened and
    checked alike (the same ``ConfigError`` for a missing or damaged batch), for a command
    that only reads them (``status``): without the engine's runner and its imports."""
    from backstay.clock import SYSTEM_CLOCK  # noqa: PLC0415 - see the imports
    from backstay.store.open import open_stores  # noqa: PLC0415

    if location is not None and location.kind is StoreKind.REDIS:
        _faults.using(state_dir, location.display)
        return _shared_stores(state_dir, location, create=False, env=None)
    store_dir = _sqlite_store_dir(state_dir, location, create=False).absolute()
    with _opening(store_dir):
        # As ``Engine(store_dir)`` opens them.
        return open_stores(
            StoreLocation.sqlite(store_dir), state_dir=store_dir, clock=SYSTEM_CLOCK,
            secrets=os.environ,
        )  # fmt: skip


def _sqlite_store_dir(state_dir: Path, location: StoreLocation | None, *, create: bool) -> Path:
    """Where the SQLite store of ``state_dir``'s batch is, checked: unless ``create`` it
    must hold the batch's records (``_records.check_recorded``) and its state file."""
    from backstay.store.sqlite.tasks import STATE_FILE  # noqa: PLC0415 - see the imports

    store_dir = state_dir if location is None or location.path is None else location.path
    _faults.using(state_dir, store_dir / STATE_FILE)
    if not create and state_dir.is_dir():
        _records.check_recorded(state_dir, store_dir)
    if not create and not (store_dir / STATE_FILE).is_file():
        what = "does not exist" if not store_dir.exists() else f"holds no {STATE_FILE}"
        raise ConfigError(
            f"{store_dir} {what}: no batch ran there (start one with backstay batch)",
            where="--state-dir",
        )
    check_not_a_file(store_dir)
    return store_dir


@contextlib.contextmanager
def _opening(store_dir: Path) -> Iterator[None]:
    """Opening the SQLite store in ``store_dir``: a file system's refusal, or the lock of
    another process, is a ``ConfigError`` naming it."""
    from backstay.store.sqlite.tasks import STATE_FILE  # noqa: PLC0415 - see the imports

    try:
        yield
    except OSError as exc:
        raise ConfigError(
            f"cannot use {store_dir}: {exc.strerror or exc}", where="--state-dir"
        ) from None
    except sqlite3.OperationalError as exc:
        if getattr(exc, "sqlite_errorname", "") not in _CONTENTION:
            raise
        raise ConfigError(
            f"{store_dir / STATE_FILE} is locked by another process (a batch or resume "
            "still running on it?); nothing was changed: try again when it has finished",
            where="--state-dir",
        ) from None


def check_startable(state_dir: Path, location: StoreLocation) -> None:
    """Before ``batch`` writes anything in ``state_dir``: a ``ConfigError`` when its SQLite
    store holds a batch that ``batch.json`` does not name, or when the records
    ``batch.json`` speaks of are gone (``_records.check_startable``)."""
    if location.kind is StoreKind.SQLITE and state_dir.is_dir():
        _records.check_startable(state_dir, location.path)
    elif location.kind is StoreKind.REDIS:
        _check_shared_startable(state_dir, location)


def _check_shared_startable(state_dir: Path, location: StoreLocation) -> None:
    """The Redis twin of ``_records.check_startable``: one batch per namespace, so a
    namespace that holds a batch ``batch.json`` does not name is never given a second."""
    from backstay.store.open import open_stores  # noqa: PLC0415 - see the imports

    identity = read_identity(state_dir) if state_dir.is_dir() else None
    stores = open_stores(location, state_dir=state_dir, secrets=os.environ)
    try:
        held: dict[str, int] = {}
        for record in stores.tasks.tasks():
            held[record.spec.workflow_id] = held.get(record.spec.workflow_id, 0) + 1
    finally:
        stores.close()
    where = f"{location.display}"
    if held and (identity is None or identity.workflow_id not in held):
        batches = ", ".join(f"{name} ({n} tasks)" for name, n in sorted(held.items()))
        named = (
            f"{state_dir / BATCH_FILE} is missing"
            if identity is None
            else f"{state_dir / BATCH_FILE} names batch {identity.workflow_id}"
        )
        raise ConfigError(
            f"the store {where} holds batch {batches}, but {named}: running the suite "
            "here would start a second batch beside it. Nothing was changed: backstay "
            f"resume --store URL --state-dir DIR continues the batch there, or give this "
            "suite a namespace of its own (?namespace=NAME in the store URL)",
            where="--store",
        )
    if not held and identity is not None:
        trace = _records.trace_of_tasks(state_dir)
        if trace is not None:
            raise ConfigError(
                f"the store {where} holds no task, but batch {identity.workflow_id} "
                f"recorded tasks there ({trace}): its records are gone (the namespace "
                "emptied, or Redis restarted without its append-only file). Nothing was "
                "changed and nothing was run: restore Redis from a copy, or run the suite "
                "again with a new --state-dir and namespace",
                where="--store",
            )


def _open_shared(
    state_dir: Path, location: StoreLocation, *, create: bool, **options: Any
) -> Engine:
    """The engine with its state in the Redis store ``location`` (artefacts in
    ``state_dir``); without ``create`` the store must hold a batch."""
    from backstay.engine.runner import Engine  # noqa: PLC0415 - see the imports

    stores = _shared_stores(state_dir, location, create=create, env=options.get("env"))
    try:
        return Engine(state_dir, stores=stores, **options)
    except BaseException:
        stores.close()
        raise


def _shared_stores(
    state_dir: Path, location: StoreLocation, *, create: bool, env: Mapping[str, str] | None
) -> StoreBundle:
    """The stores of the Redis store ``location`` (artefacts in ``state_dir``), their
    warnings said; without ``create`` the store must hold a batch."""
    from backstay.store.open import open_stores  # noqa: PLC0415 - see the imports

    check_not_a_file(state_dir)
    make_private_dirs(state_dir)
    stores = open_stores(
        location,
        state_dir=state_dir,
        secrets=os.environ if env is None else env,
        on_outage=_say,
    )
    for warning in stores.warnings:
        _say(f"warning: {warning}")
    if not create and not stores.has_batch():
        stores.close()
        raise ConfigError(
            f"{location.display} holds no batch in namespace {location.namespace!r} "
            "(start one with backstay batch --store …)",
            where="--store",
        )
    return stores


def say(message: str) -> None:
    """Print ``message`` on stderr as it is (no markup)."""
    from rich.console import Console  # noqa: PLC0415 - rich when something is said
    from rich.markup import escape  # noqa: PLC0415

    Console(stderr=True, soft_wrap=True).print(escape(message), highlight=False)


_say = say


def store_lost(err: StoreUnreachable, state_dir: Path) -> typer.Exit:
    """Say what happened when the shared store stopped answering mid-batch; the exit."""
    _say(_faults.store_lost_message(err, state_dir))
    return typer.Exit(STORE_UNREACHABLE)


def batch_flags(state_dir: Path, location: StoreLocation | None = None) -> str:
    """The flags that name the batch again in a hint: ``--state-dir DIR``, and ``--store``
    when the state directory alone does not find the batch's store (its ``batch.json``
    names another, or none, or one whose password was left out: shown with ``***``, to
    give whole or in $BACKSTAY_STORE)."""
    flags = f"--state-dir {state_dir}"
    try:
        identity = read_identity(state_dir) if state_dir.is_dir() else None
    except ConfigError:
        identity = None
    kept = None if identity is None else identity.store
    wanted = kept if location is None else recorded_store(location, state_dir)
    if wanted is None or (wanted == kept and _MASK not in wanted):
        return flags
    return f"{flags} --store '{wanted}'" if "://" in wanted else f"{flags} --store {wanted}"


def guard_settings(lease_ttl_s: float) -> GuardSettings:
    return GuardSettings(lease_ttl_s=lease_ttl_s)


def exit_code(summary: Summary) -> int:
    """5 when a spending budget paused a task, else 4 while a task waits (paused,
    escalated, or not finished), else 3 if a task failed or was cancelled, else 0."""
    if summary.budget_paused:
        return BUDGET_REACHED
    if any(report.state not in TERMINAL for report in summary.tasks):
        return SOME_WAITING
    if summary.count(TaskState.FAILED) or summary.count(TaskState.CANCELLED):
        return SOME_FAILED
    return ALL_SUCCEEDED


def interrupted(state_dir: Path) -> typer.Exit:
    """Say how to continue a batch stopped by Ctrl-C; the exit to raise."""
    say(
        f"interrupted: backstay resume {batch_flags(state_dir)} continues the batch "
        "(attempts cut short are tried again)"
    )
    return typer.Exit(INTERRUPTED)


def run_failed(err: ConfigError | OSError, state_dir: Path) -> typer.Exit:
    """A ``ConfigError`` as bad usage (exit 2); an ``OSError`` as one about the state
    directory's files."""
    if isinstance(err, OSError):
        err = ConfigError(
            f"{err.strerror or err}: {err.filename}", where=f"--state-dir {state_dir}"
        )
    return usage_error(err)


def keep_budget(
    engine: Engine, base: SpendBudget | None, usd: float | None, tokens: int | None
) -> None:
    """Keep the batch's budget: ``base`` (the suite's; ``None``: the one kept in the state
    directory) with the limits the flags give in place of its own."""
    if base is None and usd is None and tokens is None:
        return
    from backstay.policy.spend import BATCH_SCOPE, SpendBudget  # noqa: PLC0415 - see the imports

    kept = base or engine.spend.budget(BATCH_SCOPE)
    budget = SpendBudget(
        usd=kept.usd if usd is None else usd, tokens=kept.tokens if tokens is None else tokens
    )
    engine.spend.set_budget(BATCH_SCOPE, budget, at=engine.clock.now())
