"""``defaults`` and each entry of ``tasks``: the run settings they share, and what only a
task says (its id, its prompt, its workspace).

A task's setting wins over the same key in ``defaults``; ``policy`` and ``tiers`` are
replaced whole, never merged. Paths are resolved against the suite file's folder and must
exist when the suite is loaded.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any, Final

from backstay.config._document import Document
from backstay.config._fields import check, describe_value, suggestion
from backstay.config._paths import Path
from backstay.config._policy_ref import policy_reference
from backstay.config._sections import mapping
from backstay.config.suite.adapters import adapter_reference
from backstay.config.suite.budgets import budget
from backstay.config.suite.fallbacks import fallbacks
from backstay.config.suite.limits import task_limits
from backstay.config.suite.model import SuiteDefaults, SuiteTask
from backstay.config.suite.spec import RUN_FIELDS, STRUCTURED_RUN_KEYS, TASK_FIELDS
from backstay.config.suite.tiers import tiers
from backstay.errors import ConfigError
from backstay.policy.registry import PolicyRegistry
from backstay.policy.retry import RetryPolicy

RUN_KEYS: Final = (*RUN_FIELDS, *STRUCTURED_RUN_KEYS)
TASK_KEYS: Final = (*TASK_FIELDS, "limits", *RUN_KEYS)
_INVALID: Final = object()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    """What checking a task needs besides the task: where the suite file is, the known
    adapters and policies, and the defaults it starts from."""

    folder: pathlib.Path
    suite: str
    adapters: tuple[str, ...]
    registry: PolicyRegistry
    defaults: SuiteDefaults = dataclasses.field(default_factory=SuiteDefaults)


def _run_setting(
    doc: Document, path: Path, value: object, context: Context, *, policy: tuple[str, RetryPolicy]
) -> Any:
    """One of the shared run settings, checked; ``_INVALID`` after a problem."""
    key = path[-1]
    before = len(doc.problems)
    out: Any
    if key == "policy":
        name, base = policy
        out = policy_reference(doc, path, value, context.registry, name=name, base=base)
    elif key == "tiers":
        out = tiers(doc, path, value)
    elif key == "fallbacks":
        out = fallbacks(doc, path, value)
    elif key == "adapter":
        out = adapter_reference(doc, path, value, context.adapters)
    elif key == "budget":
        out = budget(doc, path, value)
    else:
        out = run_field(doc, path, value)
    return _INVALID if len(doc.problems) > before else out


def run_field(doc: Document, path: Path, value: object) -> Any:
    """``value`` of the plain run setting ``path[-1]``, checked (numbers as floats)."""
    field = RUN_FIELDS[path[-1]]
    for sub, reason in check(field, value):
        doc.problem((*path, *sub), reason)
    if field.type == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # times are float seconds, whichever way they were written
    return value


def _unknown(doc: Document, path: Path, key: str, known: tuple[str, ...], note: str) -> None:
    known_keys = ", ".join(known)
    doc.problem((*path, key), f"unknown key{suggestion(key, known)}{note}; known: {known_keys}")


def defaults(doc: Document, raw: object, context: Context) -> SuiteDefaults:
    """The ``defaults`` section (built-in defaults for what is missing or wrong)."""
    path: Path = ("defaults",)
    body = mapping(doc, path, raw, "settings every task starts from") or {}
    values: dict[str, Any] = {"policy": context.registry.for_operation("agent")}
    for key, value in body.items():
        if key not in RUN_KEYS:
            note = " (a task's own setting: give it in each task)" if key in TASK_FIELDS else ""
            _unknown(doc, path, key, RUN_KEYS, note)
            continue
        base = values["policy"]
        checked = _run_setting(
            doc, (*path, key), value, context, policy=(f"{context.suite}.defaults", base)
        )
        if checked is not _INVALID:
            values[key] = checked
    return SuiteDefaults(**values)


def existing_path(
    doc: Document, path: Path, value: str, folder: pathlib.Path, *, directory: bool
) -> pathlib.Path | None:
    """``value`` resolved against ``folder``, if it names an existing file (or folder)."""
    full = pathlib.Path(value).expanduser()
    full = (full if full.is_absolute() else folder / full).resolve()
    if not full.exists():
        doc.problem(path, f"no such {'folder' if directory else 'file'}: {full}")
    elif directory and not full.is_dir():
        doc.problem(path, f"is not a folder: {full}")
    elif not directory and not full.is_file():
        doc.problem(path, f"is not a file: {full}")
    else:
        return full
    return None


def prompt_file(doc: Document, path: Path, value: str, folder: pathlib.Path) -> pathlib.Path | None:
    """``existing_path`` for a prompt file that also holds a prompt: UTF-8 text, not
    blank (an agent given no prompt would run for nothing)."""
    found = existing_path(doc, path, value, folder, directory=False)
    if found is None:
        return None
    try:
        text = found.read_bytes().decode("utf-8")
    except OSError as err:
        doc.problem(path, f"cannot read {found}: {err.strerror or err}")
        return None
    except UnicodeDecodeError as err:
        doc.problem(path, f"is not UTF-8 text (byte {err.start}): {found}")
        return None
    if not text.strip():
        doc.problem(path, f"is empty: {found}")
        return None
    return found


def _own(doc: Document, path: Path, key: str, value: object, folder: pathlib.Path) -> Any:
    problems = check(TASK_FIELDS[key], value)
    for sub, reason in problems:
        doc.problem((*path, key, *sub), reason)
    if problems or not isinstance(value, str):
        return _INVALID
    if key == "prompt_file":
        found = prompt_file(doc, (*path, key), value, folder)
        return _INVALID if found is None else found
    if key == "workspace":
        found = existing_path(doc, (*path, key), value, folder, directory=True)
        return _INVALID if found is None else found
    if key == "prompt" and not value.strip():
        doc.problem((*path, key), "is empty")
        return _INVALID
    return value


def _prompt(doc: Document, path: Path, body: dict[str, Any]) -> None:
    given = [key for key in ("prompt", "prompt_file") if key in body]
    if len(given) == 2:
        doc.problem((*path, "prompt_file"), "give prompt or prompt_file, not both")
    elif not given:
        doc.problem(path, "give prompt (the text) or prompt_file (a file holding it)")


def task(doc: Document, path: Path, raw: object, context: Context) -> SuiteTask | None:
    """One task with the defaults applied; ``None`` and problems when it cannot be built."""
    if not isinstance(raw, dict):
        doc.problem(
            path, f"must be a mapping with id and prompt or prompt_file, got {describe_value(raw)}"
        )
        return None
    before = len(doc.problems)
    label = raw.get("id") if isinstance(raw.get("id"), str) else path[-1]
    default = context.defaults
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "limits":
            continue  # checked once the adapter is known
        if key in TASK_FIELDS:
            checked = _own(doc, path, key, value, context.folder)
        elif key in RUN_KEYS:
            policy = (f"{context.suite}.{label}", default.policy)
            checked = _run_setting(doc, (*path, key), value, context, policy=policy)
        else:
            _unknown(doc, path, key, TASK_KEYS, "")
            continue
        if checked is not _INVALID:
            values[key] = checked
    if "id" not in raw:
        doc.problem((*path, "id"), "is required: a name for the task, unique in the suite")
    _prompt(doc, path, raw)
    unset = [k for k in ("adapter", "model") if k not in raw and getattr(default, k) is None]
    for key in unset:
        if ("defaults", key) not in doc.sources:  # given there but wrong: reported there
            doc.problem((*path, key), f"is not set, here or under defaults.{key}")
    if "limits" in raw:
        adapter = values.get("adapter", default.adapter)
        chain = values.get("fallbacks", default.fallbacks) or ()
        others = [str(c.adapter) for c in chain if c.adapter is not None]
        values["limits"] = task_limits(doc, (*path, "limits"), raw["limits"], adapter, others)
    if len(doc.problems) > before or unset:
        return None
    inherited = {
        key: getattr(default, key)
        for key in RUN_KEYS
        if key not in values and getattr(default, key) is not None
    }
    try:
        return SuiteTask(**inherited, **values)
    except ConfigError as err:  # the checks above should leave nothing for the object
        doc.problem(path, str(err))
        return None
