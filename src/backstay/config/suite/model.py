"""A suite of agent tasks as frozen objects: ``Suite``, its ``SuiteTask`` list, the
``AdapterOptions`` of each adapter, and the runs a suite expands to (``SuiteRun``).

``load_suite`` builds these from a file, with every problem named by file, line and key
path; built directly, each object checks its own fields and raises ``ConfigError``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from backstay._checks import check_name, check_number
from backstay.adapters.contract import TierConfig
from backstay.config.suite.spec import (
    DEFAULT_RUNS,
    DEFAULT_TIER_ID,
    DEFAULT_TIMEOUT_S,
    ENV_NAME_PATTERN,
    ID_PATTERN,
    MAX_RUNS,
)
from backstay.errors import ConfigError
from backstay.fallback.candidate import Candidate
from backstay.idempotency.ids import operation_id
from backstay.policy.builtin import AGENT_DISPATCH
from backstay.policy.retry import RetryPolicy
from backstay.policy.spend import SpendBudget

__all__ = [
    "DEFAULT_TIERS",
    "AdapterOptions",
    "Suite",
    "SuiteDefaults",
    "SuiteRun",
    "SuiteTask",
    "task_run_id",
    "workflow_id",
]

DEFAULT_TIERS: Final = (TierConfig(tier_id=DEFAULT_TIER_ID),)
_ID = re.compile(ID_PATTERN)
_ENV_NAME = re.compile(ENV_NAME_PATTERN)


def _check_id(value: object, where: str) -> None:
    if not isinstance(value, str) or not _ID.match(value):
        raise ConfigError(
            f"must be a letter or digit, then letters, digits, '_', '.' or '-'; got {value!r}",
            where=where,
        )


def _check_runs(value: object, where: str) -> None:
    check_number(value, where=where, minimum=1, maximum=MAX_RUNS, integer=True)


def _check_tiers(tiers: object, where: str) -> tuple[TierConfig, ...]:
    if isinstance(tiers, str) or not isinstance(tiers, Iterable):
        raise ConfigError("must be a list of TierConfig", where=where)
    out = tuple(tiers)
    if not out:
        raise ConfigError("must hold at least one tier", where=where)
    seen: set[str] = set()
    for i, tier in enumerate(out):
        if not isinstance(tier, TierConfig):
            raise ConfigError(f"must be a TierConfig, got {type(tier).__name__}", where=where)
        _check_id(tier.tier_id, f"{where}[{i}].tier_id")
        if tier.tier_id in seen:
            raise ConfigError(f"tier {tier.tier_id!r} is given twice", where=where)
        seen.add(tier.tier_id)
    return out


def _check_env_name(name: object, where: str) -> None:
    # The value is never echoed: a key pasted here by mistake must not reach a log.
    if not isinstance(name, str) or not _ENV_NAME.match(name):
        raise ConfigError("must be the name of an environment variable", where=where)


def _check_spend_labels(tenant: object, budget: object, where: str) -> None:
    if tenant is not None:
        _check_id(tenant, f"{where}.tenant")
    if budget is not None and not isinstance(budget, SpendBudget):
        raise ConfigError("must be a SpendBudget or None", where=f"{where}.budget")


def _frozen(value: Any) -> Any:
    """A read-only copy of plain data: mappings become read-only, lists tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: _frozen(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_frozen(item) for item in value)
    return value


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AdapterOptions:
    """The options of one adapter in a suite (or of ``backstay run``).

    ``config`` is the adapter's own settings (``AgentRequest.config``), read-only.
    ``api_key_env`` names the variable holding the API key and ``pass_env`` the variables
    passed on as they are: names only, the values are read by ``child_env`` when a run
    starts, and never kept here. ``inherit_env``: whether a run also takes the standard
    variables of the adapter's provider (``backstay.adapters.provider_env``), which the
    engine adds when it starts an attempt.
    """

    adapter: str
    config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    api_key_env: str | None = None
    pass_env: tuple[str, ...] = ()
    inherit_env: bool = True

    def __post_init__(self) -> None:
        check_name(self.adapter, where="adapter")
        if not isinstance(self.config, Mapping):
            raise ConfigError(
                f"must be a mapping, got {type(self.config).__name__}", where="config"
            )
        object.__setattr__(self, "config", _frozen(self.config))
        if self.api_key_env is not None:
            _check_env_name(self.api_key_env, "api_key_env")
        given: object = self.pass_env
        if isinstance(given, str) or not isinstance(given, Iterable):
            raise ConfigError("must be a list of variable names", where="pass_env")
        names = tuple(given)
        for i, name in enumerate(names):
            _check_env_name(name, f"pass_env[{i}]")
        object.__setattr__(self, "pass_env", names)
        if not isinstance(self.inherit_env, bool):
            raise ConfigError(
                f"must be true or false, got {self.inherit_env!r}", where="inherit_env"
            )

    def child_env(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The agent's environment, taken from ``environ``: the ``pass_env`` variables that
        are set, and the API key under its own name (``ConfigError`` if it is not set)."""
        env = {name: environ[name] for name in self.pass_env if name in environ}
        if self.api_key_env is not None:
            value = environ.get(self.api_key_env)
            if not value:
                raise ConfigError(
                    f"the environment variable {self.api_key_env} is not set "
                    f"(adapter {self.adapter!r} reads its API key from it)",
                    where="api_key_env",
                )
            env[self.api_key_env] = value
        return env


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SuiteDefaults:
    """What a task does not say itself. ``adapter`` and ``model`` may be left to tasks."""

    adapter: str | None = None
    model: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    stall_timeout_s: float | None = None
    policy: RetryPolicy = AGENT_DISPATCH
    runs: int = DEFAULT_RUNS
    tiers: tuple[TierConfig, ...] = DEFAULT_TIERS
    tenant: str | None = None
    budget: SpendBudget | None = None
    context_window: int | None = None
    fallbacks: tuple[Candidate, ...] = ()

    def __post_init__(self) -> None:
        _check_spend_labels(self.tenant, self.budget, "defaults")
        for name in ("adapter", "model"):
            value = getattr(self, name)
            if value is not None:
                check_name(value, where=f"defaults.{name}")
        check_number(self.timeout_s, where="defaults.timeout_s", above=True)
        if self.stall_timeout_s is not None:
            check_number(self.stall_timeout_s, where="defaults.stall_timeout_s", above=True)
        if not isinstance(self.policy, RetryPolicy):
            raise ConfigError("must be a RetryPolicy", where="defaults.policy")
        _check_runs(self.runs, "defaults.runs")
        object.__setattr__(self, "tiers", _check_tiers(self.tiers, "defaults.tiers"))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SuiteTask:
    """One task: what the agent is asked, where, with what, how often.

    Exactly one of ``prompt`` and ``prompt_file`` is set. ``workspace`` is the folder each
    run's workspace is copied from; ``None``: each run starts in an empty one. Paths are
    absolute when loaded from a file.
    """

    id: str
    adapter: str
    model: str
    prompt: str | None = None
    prompt_file: Path | None = None
    workspace: Path | None = None
    description: str = ""
    tiers: tuple[TierConfig, ...] = DEFAULT_TIERS
    timeout_s: float = DEFAULT_TIMEOUT_S
    stall_timeout_s: float | None = None
    policy: RetryPolicy = AGENT_DISPATCH
    runs: int = DEFAULT_RUNS
    tenant: str | None = None
    budget: SpendBudget | None = None
    context_window: int | None = None
    fallbacks: tuple[Candidate, ...] = ()
    limits: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_id(self.id, "task.id")
        _check_spend_labels(self.tenant, self.budget, "task")
        check_name(self.adapter, where="task.adapter")
        check_name(self.model, where="task.model")
        if (self.prompt is None) == (self.prompt_file is None):
            raise ConfigError("give exactly one of prompt and prompt_file", where="task.prompt")
        if self.prompt is not None and not isinstance(self.prompt, str):
            raise ConfigError("must be a string", where="task.prompt")
        for name in ("prompt_file", "workspace"):
            value = getattr(self, name)
            if value is not None:
                if not isinstance(value, str | Path) or not str(value):
                    raise ConfigError(f"must be a path, got {value!r}", where=f"task.{name}")
                object.__setattr__(self, name, Path(value))
        if not isinstance(self.description, str):
            raise ConfigError("must be a string", where="task.description")
        object.__setattr__(self, "tiers", _check_tiers(self.tiers, "task.tiers"))
        check_number(self.timeout_s, where="task.timeout_s", above=True)
        if self.stall_timeout_s is not None:
            check_number(self.stall_timeout_s, where="task.stall_timeout_s", above=True)
        if not isinstance(self.policy, RetryPolicy):
            raise ConfigError("must be a RetryPolicy", where="task.policy")
        _check_runs(self.runs, "task.runs")
        if not isinstance(self.limits, Mapping):
            raise ConfigError("must be a mapping", where="task.limits")
        object.__setattr__(self, "limits", _frozen(self.limits))


def task_run_id(tier_id: str, run: int) -> str:
    """``"T0-run_01"``: the tier and the run number (from 1, at least two digits)."""
    return f"{tier_id}-run_{run:02d}"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SuiteRun:
    """One run of a task in one tier: the unit a batch schedules and records."""

    task: SuiteTask
    tier: TierConfig
    run: int

    @property
    def task_run_id(self) -> str:
        """Unique within the task, stable for the same suite: ``"T0-run_01"``."""
        return task_run_id(self.tier.tier_id, self.run)

    @property
    def key(self) -> str:
        """Unique within the suite: ``"hello/T0-run_01"``."""
        return f"{self.task.id}/{self.task_run_id}"

    def operation_id(self, workflow: str) -> str:
        """The idempotency key of this run in the workflow ``workflow``."""
        return operation_id(workflow, self.task.id, self.task_run_id)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Suite:
    """A suite as loaded: its name, defaults, adapter options and tasks (ids unique).

    ``file`` is the file it was loaded from (``None`` when built in code). Each task
    already carries its effective settings, defaults applied. ``budget`` is the batch's
    spending budget and ``tenants`` each tenant's (docs/budgets.md). ``keep_prompts``: the
    state keeps the prompts as given (``storage: {prompts: clear}``), not redacted.
    ``gateway``: the batch's agent CLIs go through a gateway (``gateway: false`` is
    ``batch --no-gateway``).
    """

    name: str
    tasks: tuple[SuiteTask, ...]
    defaults: SuiteDefaults = dataclasses.field(default_factory=SuiteDefaults)
    adapters: Mapping[str, AdapterOptions] = dataclasses.field(default_factory=dict)
    description: str = ""
    file: Path | None = None
    budget: SpendBudget | None = None
    tenants: Mapping[str, SpendBudget] = dataclasses.field(default_factory=dict)
    keep_prompts: bool = False
    gateway: bool = True

    def __post_init__(self) -> None:
        _check_id(self.name, "suite")
        _check_spend_labels(None, self.budget, "suite")
        if not isinstance(self.tenants, Mapping):
            raise ConfigError("must map tenant names to SpendBudget", where="tenants")
        for name, limit in self.tenants.items():
            _check_spend_labels(name, limit, f"tenants.{name}")
        object.__setattr__(self, "tenants", MappingProxyType(dict(self.tenants)))
        tasks = tuple(self.tasks)
        ids = [task.id for task in tasks]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ConfigError(f"task ids given twice: {', '.join(twice)}", where="tasks")
        object.__setattr__(self, "tasks", tasks)
        if not isinstance(self.adapters, Mapping):
            raise ConfigError("must map adapter names to AdapterOptions", where="adapters")
        for name, options in self.adapters.items():
            if not isinstance(options, AdapterOptions) or options.adapter != name:
                raise ConfigError("must be the AdapterOptions of that adapter", where=name)
        object.__setattr__(self, "adapters", MappingProxyType(dict(self.adapters)))

    def task(self, task_id: str) -> SuiteTask:
        """The task ``task_id``; ``ConfigError`` if there is none."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise ConfigError(f"no task {task_id!r} in suite {self.name!r}", where="task")

    def options_for(self, adapter: str) -> AdapterOptions:
        """The options of ``adapter``: those under ``adapters``, else none."""
        return self.adapters.get(adapter) or AdapterOptions(adapter=adapter)

    def expand(self) -> tuple[SuiteRun, ...]:
        """Every run: task by task, tier by tier, run 1 to ``runs`` (a stable order)."""
        return tuple(
            SuiteRun(task=task, tier=tier, run=n)
            for task in self.tasks
            for tier in task.tiers
            for n in range(1, task.runs + 1)
        )


def workflow_id(suite: Suite, run_id: str) -> str:
    """``"nightly-20250101T120000Z"``: the suite's name and ``run_id`` (which names one
    execution of the suite; the same ``run_id`` resumes it)."""
    _check_id(run_id, "run_id")
    return f"{suite.name}-{run_id}"
