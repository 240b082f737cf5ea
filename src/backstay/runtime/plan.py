"""``Step`` and ``Plan``: what a framework adapter proposes to do, as frozen values.

A plan is a small graph: each step names the steps it depends on, and the runtime runs a
step only once every one of them succeeded. ``Plan`` checks on construction that step ids
are unique, that every dependency exists, that there is no cycle and that the plan fits its
own ``max_steps``, so a bad plan is refused before anything runs.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from backstay._checks import check_name, check_number
from backstay.errors import ConfigError

__all__ = ["Plan", "PlanStep", "Step", "redacted_plan"]


def _frozen_json(value: Mapping[str, Any], *, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"must be a mapping, got {value!r}", where=where)
    try:
        text = json.dumps(dict(value), sort_keys=True)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"must be JSON: {err}", where=where) from None
    return MappingProxyType(json.loads(text))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One step: ``action`` (what to do: a tool name, ``"answer"``, a node name …) with
    JSON ``parameters``, the ids of the steps it ``depends_on`` and an optional
    ``timeout_s`` for its execution."""

    id: str
    action: str
    parameters: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    depends_on: tuple[str, ...] = ()
    timeout_s: float | None = None

    def __post_init__(self) -> None:
        check_name(self.id, where="step.id")
        check_name(self.action, where=f"step {self.id}.action")
        object.__setattr__(
            self, "parameters", _frozen_json(self.parameters, where=f"step {self.id}.parameters")
        )
        deps = tuple(self.depends_on)
        for dep in deps:
            check_name(dep, where=f"step {self.id}.depends_on")
        object.__setattr__(self, "depends_on", deps)
        if self.timeout_s is not None:
            check_number(self.timeout_s, where=f"step {self.id}.timeout_s", above=True)

    @property
    def dependencies(self) -> tuple[str, ...]:
        """``depends_on`` under the agent adapter interface's name."""
        return self.depends_on

    @property
    def timeout_seconds(self) -> float | None:
        """``timeout_s`` under the agent adapter interface's name."""
        return self.timeout_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "action": self.action,
            "parameters": dict(self.parameters),
            "depends_on": list(self.depends_on),
            "timeout_s": self.timeout_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Step:
        return cls(
            id=data["id"],
            action=data["action"],
            parameters=data.get("parameters", {}),
            depends_on=tuple(data.get("depends_on", ())),
            timeout_s=data.get("timeout_s"),
        )


class PlanStep(Step):
    """A ``Step`` built as the agent adapter interface prints it:
    ``PlanStep(action, parameters, dependencies, timeout_seconds)``, positionally or by
    keyword. Its ``id`` is its ``action`` unless ``id=`` names it (two steps with one
    action need ids); ``dependencies`` name the ids of other steps. Backstay's own
    keywords (``depends_on``, ``timeout_s``) are accepted too, so ``dataclasses.replace``
    works on it."""

    __slots__ = ()

    def __init__(
        self,
        action: str,
        parameters: Mapping[str, Any] | None = None,
        dependencies: Iterable[str] = (),
        timeout_seconds: float | None = None,
        *,
        id: str | None = None,
        depends_on: Iterable[str] | None = None,
        timeout_s: float | None = None,
    ) -> None:
        if depends_on is not None and dependencies:
            raise ConfigError("give dependencies or depends_on, not both", where="plan_step")
        if timeout_s is not None and timeout_seconds is not None:
            raise ConfigError("give timeout_seconds or timeout_s, not both", where="plan_step")
        Step.__init__(
            self,
            id=action if id is None else id,
            action=action,
            parameters={} if parameters is None else parameters,
            depends_on=tuple(dependencies if depends_on is None else depends_on),
            timeout_s=timeout_seconds if timeout_s is None else timeout_s,
        )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """The steps of a run, at most ``max_steps`` of them, with an ``id`` and free JSON
    ``metadata``. ``order()`` gives the steps in an order that respects dependencies
    (the plan's own order among independent steps)."""

    id: str
    steps: tuple[Step, ...]
    max_steps: int = 25
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_name(self.id, where="plan.id")
        check_number(self.max_steps, where="plan.max_steps", minimum=1, integer=True)
        steps = tuple(self.steps)
        for step in steps:
            if not isinstance(step, Step):
                raise ConfigError(f"must hold Step values, got {step!r}", where="plan.steps")
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "metadata", _frozen_json(self.metadata, where="plan.metadata"))
        if len(steps) > self.max_steps:
            raise ConfigError(
                f"{len(steps)} steps exceed max_steps={self.max_steps}", where="plan.steps"
            )
        ids = [s.id for s in steps]
        if len(set(ids)) != len(ids):
            raise ConfigError("step ids must be unique", where="plan.steps")
        known = set(ids)
        for step in steps:
            for dep in step.depends_on:
                if dep not in known:
                    raise ConfigError(f"depends on unknown step {dep!r}", where=f"step {step.id}")
        self.order()  # raises on a cycle

    def step(self, step_id: str) -> Step:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)

    def order(self) -> tuple[Step, ...]:
        """The steps, each after all its dependencies; ``ConfigError`` on a cycle."""
        done: set[str] = set()
        out: list[Step] = []
        pending = list(self.steps)
        while pending:
            ready = [s for s in pending if all(d in done for d in s.depends_on)]
            if not ready:
                cycle = ", ".join(s.id for s in pending)
                raise ConfigError(f"the dependencies form a cycle among {cycle}", where="plan")
            for step in ready:
                done.add(step.id)
                out.append(step)
            pending = [s for s in pending if s.id not in done]
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "steps": [s.to_dict() for s in self.steps],
            "max_steps": self.max_steps,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        return cls(
            id=data["id"],
            steps=tuple(Step.from_dict(s) for s in data["steps"]),
            max_steps=data.get("max_steps", 25),
            metadata=data.get("metadata", {}),
        )


def redacted_plan(plan: Plan | None, redact: Callable[[Any], Any]) -> Plan | None:
    """``plan`` with its steps' parameters and its metadata passed through ``redact`` (a
    JSON value in, one out): the form a run's checkpoint keeps."""
    if plan is None:
        return None
    steps = tuple(
        dataclasses.replace(step, parameters=redact(dict(step.parameters))) for step in plan.steps
    )
    return dataclasses.replace(plan, steps=steps, metadata=redact(dict(plan.metadata)))
