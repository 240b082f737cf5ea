"""A run's checkpoint as stored text, the same for every run store: the header (the
record without its plan and results), the plan (written once per run) and one text per
step result."""

from __future__ import annotations

import json
from collections.abc import Iterable

from backstay.runtime.records import RunRecord
from backstay.runtime.results import StepResult

__all__ = ["decode_run", "header_text", "plan_text", "step_text"]


def header_text(record: RunRecord) -> str:
    """The record without its plan and step results."""
    return json.dumps(record.to_dict(results=False, plan=False), default=str)


def plan_text(record: RunRecord) -> str | None:
    """The record's plan, ``None`` when it has none yet."""
    return None if record.plan is None else json.dumps(record.plan.to_dict())


def step_text(result: StepResult) -> str:
    return json.dumps(result.to_dict())


def decode_run(
    header: str | bytes, plan: str | bytes | None, steps: Iterable[str | bytes]
) -> RunRecord:
    """The record ``header_text``, ``plan_text`` and ``step_text`` (in order) wrote."""
    data = json.loads(header)
    data["plan"] = None if plan is None else json.loads(plan)
    data["results"] = [json.loads(step) for step in steps]
    return RunRecord.from_dict(data)
