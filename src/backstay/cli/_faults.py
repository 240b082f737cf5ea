"""Faults of the machine, not of the input: a full disk, a read-only file system, a denied
permission, a damaged state file, a shared store that stopped answering.

``FaultGuard``, the root command group, turns each of them, raised anywhere in a command
(also inside an ``ExceptionGroup``), into one line on stderr naming the file and the
cause, and the exit code ``docs/cli.md`` gives it:

* ``2``: a state file is damaged (SQLite finds a malformed page, a file is not UTF-8
  text) or locked by another process;
* ``6``: the shared store (Redis) stopped answering;
* ``7``: the file system refused a read or a write (no space left, read-only, permission
  denied, I/O error).

Every record is written in one transaction, so none of them loses what was recorded
before; the message says how to continue. An exception that is none of these is a bug
and keeps its traceback.
"""

from __future__ import annotations

import contextvars
import dataclasses
import errno
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.core import TyperGroup

from backstay.cli._errors import USAGE_ERROR

if TYPE_CHECKING:
    from backstay.store.location import StoreUnreachable

__all__ = ["FILE_SYSTEM_FAULT", "STORE_UNREACHABLE", "FaultGuard", "describe", "using"]

# The shared store stopped answering (``store_unavailable: stop``).
STORE_UNREACHABLE: Final = 6
# The file system refused to read or write a file of the state directory.
FILE_SYSTEM_FAULT: Final = 7
# The commands that run a batch: after a fault, ``backstay resume`` continues it.
_RUNNERS: Final = frozenset({"batch", "resume"})
_NO_SPACE: Final = frozenset({errno.ENOSPC, errno.EDQUOT})
_DENIED: Final = frozenset({errno.EACCES, errno.EPERM})
_CONTENTION: Final = ("SQLITE_BUSY", "SQLITE_LOCKED")
_REFUSED: Final = ("SQLITE_FULL", "SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_CANTOPEN")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _InUse:
    state_dir: Path
    store: str


# The state directory and store the running command opened (for messages naming them).
_IN_USE: contextvars.ContextVar[_InUse | None] = contextvars.ContextVar(
    "backstay_state_in_use", default=None
)


def using(state_dir: Path, store: str | Path) -> None:
    """Note that the running command works on ``state_dir`` with its records in ``store``
    (the SQLite file, or the shared store's display URL)."""
    _IN_USE.set(_InUse(state_dir=state_dir, store=str(store)))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """What to say about a fault, and the exit code."""

    code: int
    message: str


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _continue(command: str | None, state_dir: Path | None, fix: str) -> str:
    where = "DIR" if state_dir is None else str(state_dir)
    if command in _RUNNERS:
        return (
            f"Nothing recorded before was lost: {fix}, then backstay resume --state-dir "
            f"{where} continues the batch (attempts cut short are tried again)"
        )
    return f"Nothing recorded was changed: {fix}, then run the command again"


def _os_fault(exc: OSError, command: str | None, in_use: _InUse | None) -> Fault | None:
    if exc.errno is None or isinstance(exc, (ConnectionError, BlockingIOError)):
        return None
    state_dir = None if in_use is None else in_use.state_dir
    name = exc.filename or (None if in_use is None else in_use.state_dir) or "the state directory"
    if exc.errno in _NO_SPACE:
        cause, fix = "no space left on the device", "free some space"
    elif exc.errno == errno.EROFS:
        cause, fix = "the file system is read-only", "make it writable"
    elif exc.errno in _DENIED:
        cause, fix = "permission denied", "give this user access to it"
    else:
        cause, fix = exc.strerror or str(exc), "fix the cause"
    return Fault(
        code=FILE_SYSTEM_FAULT,
        message=f"cannot use {name}: {cause}. {_continue(command, state_dir, fix)}",
    )


def _sqlite_fault(
    exc: sqlite3.DatabaseError, command: str | None, in_use: _InUse | None
) -> Fault | None:
    # ProgrammingError, IntegrityError and the like are mistakes of backstay: a traceback.
    if type(exc) not in (sqlite3.DatabaseError, sqlite3.OperationalError):
        return None
    name = getattr(exc, "sqlite_errorname", "")
    state_dir = None if in_use is None else in_use.state_dir
    store = "the state file" if in_use is None else in_use.store
    if name.startswith(_CONTENTION):
        return Fault(
            code=USAGE_ERROR,
            message=f"{store} is locked by another process (a batch or resume still running "
            "on it?); try again when it has finished",
        )
    if name.startswith(_REFUSED):
        from backstay.observe.health import file_system_fault  # noqa: PLC0415 - on a fault only

        found = None if state_dir is None else file_system_fault(Path(store).parent)
        cause = str(exc) if found is None else f"{exc}: {found}"
        if name == "SQLITE_FULL" or (found is not None and "space" in found):
            fix = "free some space"
        elif found is not None and "read-only" in found:
            fix = "make it writable"
        else:
            fix = "fix the cause"
        return Fault(
            code=FILE_SYSTEM_FAULT,
            message=f"cannot use {store}: {cause}. {_continue(command, state_dir, fix)}",
        )
    return Fault(
        code=USAGE_ERROR,
        message=f"{store} is damaged ({exc}); backstay left it as it is: restore it from a "
        "copy, or run the suite again with a new --state-dir",
    )


def _unicode_fault(exc: UnicodeDecodeError, in_use: _InUse | None) -> Fault:
    where = "a file of the state directory" if in_use is None else f"a file of {in_use.state_dir}"
    return Fault(
        code=USAGE_ERROR,
        message=f"{where} is damaged: it is not UTF-8 text ({exc.reason} at byte "
        f"{exc.start}); it was left as it is",
    )


def store_lost_message(err: StoreUnreachable, state_dir: Path | str) -> str:
    """What to say when the shared store stopped answering."""
    return (
        f"stopped: {err}. Everything recorded before is kept in the store; tasks that "
        "were running keep their leases until they lapse, so no other runner starts them "
        "meanwhile. When the store answers again, backstay resume --store … --state-dir "
        f"{state_dir} continues the batch (attempts cut short are tried again)"
    )


def describe(exc: BaseException, *, command: str | None = None) -> Fault | None:
    """The fault ``exc`` stands for (the first of a group that is one), or ``None`` when
    it is not a fault of the machine (a bug: it keeps its traceback)."""
    from backstay.store.location import StoreUnreachable  # noqa: PLC0415 - on a fault only

    in_use = _IN_USE.get()
    for leaf in _leaves(exc):
        found: Fault | None = None
        if isinstance(leaf, StoreUnreachable):
            state_dir = "DIR" if in_use is None else in_use.state_dir
            found = Fault(code=STORE_UNREACHABLE, message=store_lost_message(leaf, state_dir))
        elif isinstance(leaf, sqlite3.DatabaseError):
            found = _sqlite_fault(leaf, command, in_use)
        elif isinstance(leaf, UnicodeDecodeError):
            found = _unicode_fault(leaf, in_use)
        elif isinstance(leaf, OSError):
            found = _os_fault(leaf, command, in_use)
        if found is not None:
            return found
    return None


class FaultGuard(TyperGroup):
    """The root group: a fault of the machine in any command becomes one line on stderr
    and its exit code, instead of a traceback."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except NoArgsIsHelpError:
            raise
        except ClickException as exc:  # a bad flag of backstay itself (backstay --bogus)
            from backstay.cli._help_style import print_error  # noqa: PLC0415 - on an error only

            print_error(exc)
            raise typer.Exit(exc.exit_code) from None

    def invoke(self, ctx: Any) -> Any:
        token = _IN_USE.set(None)
        try:
            return super().invoke(ctx)
        except NoArgsIsHelpError:
            raise  # a group given no command: its help, as typer prints it
        except ClickException as exc:  # a command's bad flag: backstay's own error line
            from backstay.cli._help_style import print_error  # noqa: PLC0415 - on an error only

            print_error(exc)
            raise typer.Exit(exc.exit_code) from None
        except Exception as exc:
            fault = describe(exc, command=ctx.invoked_subcommand)
            if fault is None:
                raise
            from rich.console import Console  # noqa: PLC0415 - on a fault only
            from rich.markup import escape  # noqa: PLC0415

            Console(stderr=True, soft_wrap=True).print(
                f"[bold red]error:[/] {escape(fault.message)}", highlight=False
            )
            raise typer.Exit(fault.code) from None
        finally:
            _IN_USE.reset(token)
