"""``backstay health --json`` answered by the entry point before the command line is built.

A liveness probe runs it every few seconds; typer, the root's command group and the help
style cost more CPU than reading the batch (about 0.04 s of a 0.2 s run). When the
arguments after ``health`` are only ``--json``, ``--state-dir DIR`` (or
``$BACKSTAY_STATE_DIR``) and ``--store URL``, each at most once and in either ``--flag
VALUE`` or ``--flag=VALUE`` form, the report is made (``cli._health_report``) and
written here, with the exit code the command gives (0 for pass and warn, 1 for fail).

Anything else goes to the command as always: another flag or form (``--set``, ``--help``,
a value that starts with ``-`` or is empty, a flag given twice), shell completion asked
for, a ``--state-dir`` that exists but cannot be read (typer refuses it), and every error
while the report is made (no batch, a damaged file, a fault of the machine): nothing has
been written then, and the command reads the batch again and says what is wrong in its
own words and exit code; so too when the output cannot be written (a full disk; a reader
gone ends it as the command ends then). ``tests/cli/test_health_probe.py`` holds the two
paths' output and exit codes alike.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

__all__ = ["answer"]

# The flags taking a value that the short path reads; ``--json`` is the other one.
_VALUED: Final = ("--state-dir", "--store")
# As a shell reports a process ended by Ctrl-C, and the command exits on it.
_INTERRUPTED: Final = 130


def answer(args: list[str]) -> int | None:
    """The exit code of ``backstay health ARGS`` once its report is written, or ``None``
    when the command must run it (nothing written)."""
    flags = _plain_flags(args)
    if flags is None:
        return None
    state_dir, store = flags
    # Imported here: the entry point imports this module for every ``health``.
    from backstay.cli import _health_report  # noqa: PLC0415
    from backstay.cli._store_in_force import store_location  # noqa: PLC0415
    from backstay.observe.health import FAIL  # noqa: PLC0415

    try:
        report = _health_report.report_at(state_dir, store_location(store, state_dir))
    except KeyboardInterrupt:
        return _INTERRUPTED
    except Exception:  # noqa: BLE001 - the command says what it is, as it always has
        return None
    try:
        sys.stdout.write(_health_report.as_json(report))
    except BrokenPipeError:  # the reader left: the command line ends so then
        from typer._click.utils import PacifyFlushWrapper  # noqa: PLC0415 - this case only

        sys.stdout = PacifyFlushWrapper(sys.stdout)
        sys.stderr = PacifyFlushWrapper(sys.stderr)
        return 1
    except OSError:  # the write was refused (nothing written): the command says so
        return None
    return _health_report.UNHEALTHY if report.status == FAIL else 0


def _plain_flags(args: list[str]) -> tuple[Path, str | None] | None:
    """``(state_dir, store)`` of ``health --json`` given plainly, else ``None``."""
    from backstay.cli._store_in_force import STATE_DIR_ENV_VAR  # noqa: PLC0415 - see answer

    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ):
        return None  # shell completion: typer's
    as_json = False
    values: dict[str, str] = {}
    words = iter(args)
    for word in words:
        if word == "--json" and not as_json:
            as_json = True
            continue
        name, equals, value = word.partition("=")
        if name not in _VALUED or name in values:
            return None
        if not equals:
            value = next(words, "")
        if not value or value.startswith("-"):
            return None
        values[name] = value
    # As typer reads the variable: an empty one is not given.
    state_dir = values.get("--state-dir") or os.environ.get(STATE_DIR_ENV_VAR)
    if not as_json or not state_dir:
        return None
    if os.path.exists(state_dir) and not os.access(state_dir, os.R_OK):
        return None  # typer says it is not readable
    return Path(state_dir), values.get("--store")
