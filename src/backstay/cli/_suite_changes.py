"""What ``backstay resume`` says when the batch's suite file was edited after its tasks
were recorded: ``resume`` runs the recorded specs, so it names the tasks whose spec the
file now gives otherwise (and which fields), the tasks it adds or no longer has, and the
commands that apply the edit."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from backstay.cli._report import task_label
from backstay.engine.states import REOPENABLE, TaskState
from backstay.errors import ConfigError

# The suite's loader and the diff are imported when a suite is compared (see
# ``suite_changes``), not when ``resume`` is loaded.
if TYPE_CHECKING:
    from backstay.config import BackstayConfig
    from backstay.engine import SuiteDiff, TaskRecord
    from backstay.engine.suite_batch import BatchIdentity

# How many tasks each part of the note names before it says how many more there are.
_SHOWN: Final = 10


def _names(labels: Sequence[str]) -> str:
    more = len(labels) - _SHOWN
    return ", ".join(labels[:_SHOWN]) + (f" and {more} more" if more > 0 else "")


def suite_changes(
    records: Sequence[TaskRecord],
    identity: BatchIdentity | None,
    *,
    state_dir: Path,
    config: BackstayConfig,
    flags: str,
) -> list[str]:
    """The lines to print before resuming (none when the suite file is unchanged, gone,
    or the batch never named one)."""
    if identity is None or identity.suite_file is None:
        return []
    file = Path(identity.suite_file)
    if not file.is_file():
        return []
    from backstay.config import load_suite, with_frameworks  # noqa: PLC0415 - see the imports
    from backstay.engine.suite_batch import SuiteBatch  # noqa: PLC0415
    from backstay.engine.suite_diff import suite_diff  # noqa: PLC0415

    try:
        suite = with_frameworks(load_suite(file, registry=config.registry), config.frameworks)
        batch = SuiteBatch.open(suite, state_dir)
    except ConfigError as err:
        return [f"note: {file} was not compared with the recorded tasks: {err}"]
    return describe(suite_diff(records, batch.specs), file=file, flags=flags)


def describe(diff: SuiteDiff, *, file: Path, flags: str) -> list[str]:
    """``diff`` as lines: what changed, then how to apply it."""
    if not diff:
        return []
    lines = [f"{file} changed since its tasks were recorded; resume runs them as recorded:"]
    lines += [
        f"  {task_label(c.operation_id)} ({c.state}): {', '.join(c.fields)} changed"
        for c in diff.changed[:_SHOWN]
    ]
    if len(diff.changed) > _SHOWN:
        lines.append(f"  and {len(diff.changed) - _SHOWN} more changed tasks")
    if diff.added:
        lines.append(f"  new in the file: {_names([task_label(op) for op in diff.added])}")
    if diff.removed:
        lines.append(f"  no longer in the file: {_names([task_label(op) for op in diff.removed])}")
    reopen = [task_label(c.operation_id) for c in diff.changed if c.state in REOPENABLE]
    waiting = [c for c in diff.changed if c.state is not TaskState.SUCCEEDED]
    if reopen:
        lines.append(
            f"  to run the failed or cancelled ones with the file's specs: backstay retry "
            f"{' '.join(reopen[:_SHOWN])} --suite {file} {flags}"
        )
    if diff.added or len(waiting) > len(reopen):
        lines.append(
            f"  to record the file's specs for the tasks not finished (and add the new "
            f"ones): backstay batch {file} {flags}"
        )
    if any(c.state is TaskState.SUCCEEDED for c in diff.changed):
        lines.append("  succeeded tasks are never run again")
    return lines
