"""``suite_diff``: what an edited suite would change in a batch's stored tasks.

A batch keeps each task's spec as it was registered; ``resume`` runs those. When the
suite file is edited afterwards, ``suite_diff(records, specs)`` compares the stored specs
with the suite's current ones (as the state would keep them: ``encode_spec``, no secret
values, the prompt redacted as at rest) and names, per task, the fields that differ, the
tasks the suite adds and those it no longer has. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from backstay.engine._spec_codec import encode_spec
from backstay.engine.records import TaskRecord
from backstay.engine.states import TaskState
from backstay.engine.task import TaskSpec

__all__ = ["SpecChange", "SuiteDiff", "suite_diff"]

# Not the suite's to change: the format, and whether the run inherited its providers'
# variables (a flag of the command that ran it, --isolated-env).
_IGNORED: Final = frozenset({"format", "inherit_env"})
# Fields shown under another name: a prompt's digest changes with the prompt.
_SHOWN_AS: Final = {"prompt_sha256": "prompt"}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SpecChange:
    """A task whose stored spec differs from the suite's: the fields, and its state."""

    operation_id: str
    task_id: str
    state: TaskState
    fields: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SuiteDiff:
    """``changed``: tasks whose spec differs; ``added``: operation ids the suite has and
    the batch does not; ``removed``: those the batch has and the suite no longer does."""

    changed: tuple[SpecChange, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changed or self.added or self.removed)


def _fields(record: TaskRecord) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(encode_spec(record.spec))
    if record.missing_env:  # kept by name, their values not in this environment
        data["secret_env"] = sorted({*data["secret_env"], *record.missing_env})
    return data


def _differing(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[str, ...]:
    names = {
        _SHOWN_AS.get(key, key)
        for key in old.keys() | new.keys()
        if key not in _IGNORED and old.get(key) != new.get(key)
    }
    return tuple(sorted(names))


def suite_diff(records: Sequence[TaskRecord], specs: Sequence[TaskSpec]) -> SuiteDiff:
    """How ``specs`` (the suite's, now) differ from the stored ``records``."""
    stored = {record.operation_id: record for record in records}
    wanted = {spec.operation_id: spec for spec in specs}
    changed = []
    for op, record in stored.items():
        spec = wanted.get(op)
        if spec is None:
            continue
        fields = _differing(_fields(record), json.loads(encode_spec(spec)))
        if fields:
            changed.append(
                SpecChange(operation_id=op, task_id=record.task_id, state=record.state,
                           fields=fields)
            )  # fmt: skip
    return SuiteDiff(
        changed=tuple(changed),
        added=tuple(op for op in wanted if op not in stored),
        removed=tuple(op for op in stored if op not in wanted),
    )
