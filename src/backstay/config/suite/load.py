"""``load_suite``: read a suite file and check all of it once.

Every problem is collected — unknown keys (with a suggestion), wrong types, duplicate
task and tier ids, prompts, missing files, runs, adapters and their settings, policies —
and one ``ConfigError`` lists them all, each with file, line and key path. Messages never
repeat a secret: values of refused keys are not shown, and every message is redacted.
The environment is not read: variables are named here, and read when a run starts.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from typing import Any

from backstay.config._document import Document
from backstay.config._fields import check, describe_value
from backstay.config._load import read_file
from backstay.config._paths import Path
from backstay.config._sections import mapping, unknown_key
from backstay.config.suite.adapters import (
    adapter_options,
    adapter_reference,
    check_adapter_settings,
    known_adapters,
)
from backstay.config.suite.budgets import budget, tenants
from backstay.config.suite.model import AdapterOptions, Suite, SuiteTask
from backstay.config.suite.spec import DESCRIPTION_FIELD, SUITE_NAME_FIELD, TOP_LEVEL
from backstay.config.suite.storage import keep_prompts
from backstay.config.suite.tasks import Context, defaults, task
from backstay.config.suite.tiers import first_seen
from backstay.policy.registry import PolicyRegistry, current_registry
from backstay.redact import redact

_FALLBACK_NAME = "suite"


def _text(doc: Document, key: str, raw: dict[str, Any]) -> str | None:
    field = SUITE_NAME_FIELD if key == "suite" else DESCRIPTION_FIELD
    if key not in raw:
        return None
    problems = check(field, raw[key])
    for sub, reason in problems:
        doc.problem((key, *sub), reason)
    return None if problems else str(raw[key])


def _adapters(doc: Document, raw: object, known: tuple[str, ...]) -> dict[str, AdapterOptions]:
    body = mapping(doc, ("adapters",), raw, "adapter name → settings") or {}
    out: dict[str, AdapterOptions] = {}
    for name, options in body.items():
        path: Path = ("adapters", name)
        if adapter_reference(doc, path, name, known) is None:
            continue
        built = adapter_options(doc, path, name, options)
        if built is not None:
            out[name] = built
    return out


def _tasks(doc: Document, raw: object, context: Context) -> list[SuiteTask]:
    if not isinstance(raw, list) or not raw:
        got = "an empty list" if raw == [] else describe_value(raw)
        doc.problem(("tasks",), f"must be a list of at least one task, got {got}")
        return []
    out: list[SuiteTask] = []
    first: dict[str, Path] = {}
    for index, item in enumerate(raw):
        path: Path = ("tasks", f"[{index}]")
        task_id = item.get("id") if isinstance(item, dict) else None
        if isinstance(task_id, str) and task_id in first:
            doc.problem(
                (*path, "id"),
                f"task {task_id!r} is given twice" + first_seen(doc, (*first[task_id], "id")),
            )
        elif isinstance(task_id, str):
            first[task_id] = path
        built = task(doc, path, item, context)
        if built is not None:
            out.append(built)
    return out


def _references(raw: dict[str, Any]) -> dict[str, Path]:
    """Adapter name → where it is first named (a task using the default: under defaults)."""
    out: dict[str, Path] = {}
    named = raw.get("defaults")
    if isinstance(named, dict) and isinstance(named.get("adapter"), str):
        out[named["adapter"]] = ("defaults", "adapter")
    tasks = raw.get("tasks")
    for index, item in enumerate(tasks if isinstance(tasks, list) else []):
        if isinstance(item, dict) and isinstance(item.get("adapter"), str):
            out.setdefault(item["adapter"], ("tasks", f"[{index}]", "adapter"))
    return out


def _build(
    doc: Document, raw: dict[str, Any], file: pathlib.Path, registry: PolicyRegistry
) -> Suite | None:
    for key in raw:
        if key not in TOP_LEVEL:
            unknown_key(doc, (), key, list(TOP_LEVEL))
    if "suite" not in raw:
        doc.problem(("suite",), "is required: the suite's name, e.g. suite: nightly")
    if "tasks" not in raw:
        doc.problem(("tasks",), "is required: the list of tasks")
    name = _text(doc, "suite", raw)
    description = _text(doc, "description", raw) or ""
    known = known_adapters()
    context = Context(
        folder=file.resolve().parent,
        suite=name or _FALLBACK_NAME,
        adapters=known,
        registry=registry,
    )
    context = dataclasses.replace(context, defaults=defaults(doc, raw.get("defaults"), context))
    options = _adapters(doc, raw.get("adapters"), known)
    batch_budget = budget(doc, ("budget",), raw["budget"]) if "budget" in raw else None
    tenant_budgets = tenants(doc, raw.get("tenants"))
    clear_prompts = keep_prompts(doc, raw.get("storage"))
    gateway = raw.get("gateway", True)
    if not isinstance(gateway, bool):
        doc.problem(("gateway",), f"must be true or false, got {gateway!r}")
    tasks = _tasks(doc, raw.get("tasks"), context) if "tasks" in raw else []
    references = _references(raw)
    for adapter in sorted(set(options) | set(references)):
        given = adapter in options
        if not given and ("adapters", adapter) in doc.sources:
            continue  # given but wrong: its own problem says why
        check_adapter_settings(
            doc,
            options.get(adapter) or AdapterOptions(adapter=adapter),
            at=("adapters", adapter) if given else references[adapter],
            given=given,
        )
    if doc.problems or name is None:
        return None
    return Suite(
        name=name,
        description=description,
        defaults=context.defaults,
        adapters=options,
        tasks=tuple(tasks),
        file=file,
        budget=batch_budget,
        tenants=tenant_budgets,
        keep_prompts=clear_prompts,
        gateway=gateway is not False,
    )


def load_suite(path: str | os.PathLike[str], *, registry: PolicyRegistry | None = None) -> Suite:
    """Load and check the suite file ``path``.

    Named policies are looked up in ``registry`` (default: the one the library uses now,
    which ``backstay.configure()`` sets). Raises one ``ConfigError`` listing every
    problem with its file, line and key path.
    """
    file = pathlib.Path(path)
    doc = Document(name=str(file))
    data = read_file(file, doc)
    suite = None
    if isinstance(data, dict):
        suite = _build(doc, data, file, current_registry() if registry is None else registry)
    elif not doc.problems:
        got = "an empty file" if data is None else describe_value(data)
        doc.problem((), f"must be a mapping with suite and tasks, got {got}")
    if suite is None:
        doc.problems[:] = [dataclasses.replace(p, reason=redact(p.reason)) for p in doc.problems]
        raise doc.error()
    return suite
