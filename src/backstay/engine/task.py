"""``TaskSpec``: one task of a batch, as the engine runs it — what to run, where, how often.

A spec names its task (``workflow_id``, ``task_id``, ``run`` and the tier), the adapter
that runs it, everything an ``AgentRequest`` needs except ``output_dir`` (the engine gives
each attempt its own), and the retry policy (a name in the engine's registry, a
``RetryPolicy``, or ``None`` for the registry's policy for agent runs).

Its ``operation_id`` is ``"{workflow_id}:{task_id}:{task_run_id}"`` with ``task_run_id``
``"{tier_id}-run_{NN}"`` (``"run_{NN}"`` without a tier): the same for every attempt and
every resume of the task, so it is the key the idempotency guard deduplicates on.

``budget`` limits what the task's attempts may spend (USD, tokens); ``tenant`` names whose
work it is, so that the tenant's budget covers it (docs/budgets.md).

``fallbacks`` are the candidates (``backstay.fallback.Candidate`` with an ``adapter``) the
task may move to when a failure calls for it; ``context_window`` is the task's own
model's window, so that a context overflow can move to a larger one (docs/fallback.md).
``limits`` are the task's portable limits (``backstay.adapters.limits``): a fallback on
another adapter gets them mapped onto its own settings; the spec's ``config`` carries them
already for its own adapter (``SuiteBatch`` maps them).

Identifiers end up in file paths (``runs/<task_id>/<tier_id>/run_NN/``), so they are
restricted to letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from backstay._checks import check_number
from backstay.adapters.contract import AgentRequest, TierConfig
from backstay.errors import ConfigError
from backstay.fallback.candidate import Candidate
from backstay.idempotency.ids import attempt_id as make_attempt_id
from backstay.idempotency.ids import operation_id as make_operation_id
from backstay.policy.retry import RetryPolicy
from backstay.policy.spend import SpendBudget

if TYPE_CHECKING:
    from backstay.store.location import StoreLocation

__all__ = ["NO_TIER_DIR", "TaskSpec", "attempt_id", "check_identifier", "task_run_id"]

# The directory of a task without a tier: runs/<task_id>/default/run_01/.
NO_TIER_DIR: Final = "default"
_IDENTIFIER: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_PLACEHOLDER_OUTPUT: Final = Path("attempt")


def check_identifier(value: object, *, where: str) -> str:
    """``value`` if it is safe as an id and as one path component; ``ConfigError`` else."""
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        raise ConfigError(
            "must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or "
            f"digit, got {value!r}",
            where=where,
        )
    return value


def task_run_id(run: int, tier: TierConfig | None = None) -> str:
    """``"T0-run_01"`` for run 1 of tier ``T0``; ``"run_01"`` without a tier."""
    prefix = "" if tier is None else f"{tier.tier_id}-"
    return f"{prefix}run_{run:02d}"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskSpec:
    """One task: validated on construction (``ConfigError`` names the field).

    ``env`` holds the variables given explicitly; with ``inherit_env`` (the default) the
    engine adds the standard variables of the adapter's provider from its environment
    when an attempt starts (``backstay.adapters.provider_env``), so they are never
    recorded, and a resumed task reads them again. An attempt on a fallback candidate
    takes those of its own adapter's provider, not the task's adapter's; ``env`` goes over
    them for every candidate, and ``inherit_env=False`` leaves them out for all.

    The state keeps ``prompt`` redacted (``backstay.redact.redact_personal``) with the
    digest of the clear text, unless ``keep_prompt`` (the suite's ``storage: {prompts:
    clear}``). A spec read back from the state with a redacted prompt has
    ``prompt_sha256`` set: the engine reads the clear prompt again from its suite file
    (``backstay.engine._prompt_source``) before it runs the task.
    """

    workflow_id: str
    task_id: str
    adapter: str
    model: str
    workspace: Path
    timeout_s: float
    run: int = 1
    prompt: str | None = None
    prompt_file: Path | None = None
    env: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)
    tier: TierConfig | None = None
    config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    stall_timeout_s: float | None = None
    policy: str | RetryPolicy | None = None
    budget: SpendBudget | None = None
    tenant: str | None = None
    fallbacks: tuple[Candidate, ...] = ()
    context_window: int | None = None
    limits: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    inherit_env: bool = True
    keep_prompt: bool = False
    prompt_sha256: str | None = None

    def __post_init__(self) -> None:
        check_identifier(self.workflow_id, where="workflow_id")
        check_identifier(self.task_id, where="task_id")
        check_identifier(self.adapter, where="adapter")
        check_number(self.run, where="run", minimum=1, integer=True)
        if self.tier is not None and isinstance(self.tier, TierConfig):
            check_identifier(self.tier.tier_id, where="tier.tier_id")
        if self.policy is not None and not isinstance(self.policy, str | RetryPolicy):
            raise ConfigError(
                f"must be a policy name or a RetryPolicy, got {type(self.policy).__name__}",
                where="policy",
            )
        if isinstance(self.policy, str) and not self.policy:
            raise ConfigError("must be a non-empty name", where="policy")
        if self.budget is not None and not isinstance(self.budget, SpendBudget):
            raise ConfigError(
                f"must be a SpendBudget or None, got {type(self.budget).__name__}", where="budget"
            )
        if self.tenant is not None:
            check_identifier(self.tenant, where="tenant")
        self._check_fallbacks()
        if not isinstance(self.inherit_env, bool):
            raise ConfigError(
                f"must be true or false, got {self.inherit_env!r}", where="inherit_env"
            )
        # The request's own checks (prompt, paths, timeouts, env, tier, config), run once.
        probe = self._checked_request(_PLACEHOLDER_OUTPUT, None)
        object.__setattr__(self, "workspace", probe.workspace)
        object.__setattr__(self, "prompt_file", probe.prompt_file)
        object.__setattr__(self, "env", probe.env)
        object.__setattr__(self, "config", probe.config)

    def _check_fallbacks(self) -> None:
        fallbacks = tuple(self.fallbacks)
        object.__setattr__(self, "fallbacks", fallbacks)
        if self.context_window is not None:
            check_number(self.context_window, where="context_window", minimum=1, integer=True)
        if not isinstance(self.limits, Mapping):
            raise ConfigError(f"must be a mapping, got {self.limits!r}", where="limits")
        object.__setattr__(self, "limits", dict(self.limits))
        names = {self.primary.name}
        for i, candidate in enumerate(fallbacks):
            where = f"fallbacks[{i}]"
            if not isinstance(candidate, Candidate):
                raise ConfigError(f"must be a Candidate, got {candidate!r}", where=where)
            if candidate.adapter is None:
                raise ConfigError("must name an adapter", where=where)
            check_identifier(candidate.adapter, where=f"{where}.adapter")
            if candidate.name in names:
                raise ConfigError(f"{candidate.name} is already in the chain", where=where)
            names.add(candidate.name)

    @property
    def primary(self) -> Candidate:
        """The task's own adapter and model, as the first candidate of its chain (made
        once for each adapter, model and window: a ``Candidate`` is immutable, and a task
        asks for its chain several times an attempt)."""
        window = self.context_window
        if type(self.adapter) is str and type(self.model) is str and type(window) in _WINDOWS:
            return _primary(self.adapter, self.model, window)
        return Candidate(adapter=self.adapter, model=self.model, context_window=window)

    @property
    def candidates(self) -> tuple[Candidate, ...]:
        """The task's chain: its own adapter and model, then its fallbacks."""
        return (self.primary, *self.fallbacks)

    @property
    def task_run_id(self) -> str:
        return task_run_id(self.run, self.tier)

    @property
    def operation_id(self) -> str:
        """``"{workflow_id}:{task_id}:{task_run_id}"``: the task's idempotency key (asked
        for about 20 times a task; the id of each task in flight is kept)."""
        plain = type(self.workflow_id) is str and type(self.task_id) is str
        if (
            plain
            and type(self.run) is int
            and (self.tier is None or type(self.tier.tier_id) is str)
        ):
            tier_id = None if self.tier is None else self.tier.tier_id
            return _operation_id(self.workflow_id, self.task_id, self.run, tier_id)
        return make_operation_id(self.workflow_id, self.task_id, self.task_run_id)

    @property
    def tier_dir(self) -> str:
        """The tier's directory name under ``runs/<task_id>/``."""
        return NO_TIER_DIR if self.tier is None else self.tier.tier_id

    def run_dir(self, state_dir: Path) -> Path:
        """``<state_dir>/runs/<task_id>/<tier>/run_NN``: where the task's attempts write
        (joined once: each part is an identifier, one path component)."""
        return state_dir / f"runs/{self.task_id}/{self.tier_dir}/run_{self.run:02d}"

    def attempt_dir(self, state_dir: Path, number: int) -> Path:
        """``run_NN/attempt_N``: one attempt's logs and ``metrics.json``."""
        return state_dir / (
            f"runs/{self.task_id}/{self.tier_dir}/run_{self.run:02d}/attempt_{number}"
        )

    def request(self, output_dir: Path, *, store: StoreLocation | None = None) -> AgentRequest:
        """The ``AgentRequest`` of one attempt writing to ``output_dir``, carrying ``store``
        (where the batch's records are).

        Every field the spec gives the request passed the request's checks when the spec
        was made (``__post_init__``'s probe, whose normalised ``workspace``,
        ``prompt_file``, ``env`` and ``config`` the spec keeps: read-only mappings of its
        own), and the other runs of a suite task differ only in ``run`` and a workspace
        path (``suite_runs``). So the request is assembled from them without those checks
        again (a few times an attempt, 35 us each): only ``output_dir`` is new, and a
        ``Path`` passes its check as it is; anything else takes the checked way."""
        given: object = output_dir  # untyped callers may pass text
        if not isinstance(given, Path):
            return self._checked_request(output_dir, store)
        request = object.__new__(AgentRequest)
        put = object.__setattr__
        put(request, "model", self.model)
        put(request, "workspace", self.workspace)
        put(request, "output_dir", output_dir)
        put(request, "timeout_s", self.timeout_s)
        put(request, "prompt", self.prompt)
        put(request, "prompt_file", self.prompt_file)
        put(request, "env", self.env)
        put(request, "tier", self.tier)
        put(request, "config", self.config)
        put(request, "stall_timeout_s", self.stall_timeout_s)
        put(request, "launcher", ())
        put(request, "tenant", self.tenant)
        put(request, "store", store)
        put(request, "session", None)
        return request

    def resolved(self, env: Mapping[str, str]) -> TaskSpec:
        """``dataclasses.replace(self, env=env, inherit_env=False)``: the spec an attempt
        runs with its whole environment (``Engine`` adds its provider's variables once a
        task is driven, never recorded), made without the checks the other fields passed
        when this spec was made (about 60 us a task): only ``env`` is new, and it is
        checked and frozen as the request does it; an ``env`` that fails is made the
        checked way, which says what is wrong."""
        if not isinstance(env, Mapping) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in env.items()
        ):
            return dataclasses.replace(self, env=env, inherit_env=False)
        other = object.__new__(type(self))
        put = object.__setattr__
        for name in _FIELDS:
            put(other, name, getattr(self, name))
        put(other, "env", MappingProxyType(dict(env)))
        put(other, "inherit_env", False)
        put(other, "limits", dict(self.limits))  # each spec has its own, as made
        return other

    def _checked_request(self, output_dir: Path, store: StoreLocation | None) -> AgentRequest:
        """``request`` with every check of ``AgentRequest`` run (the spec's probe)."""
        return AgentRequest(
            model=self.model,
            workspace=self.workspace,
            output_dir=output_dir,
            timeout_s=self.timeout_s,
            prompt=self.prompt,
            prompt_file=self.prompt_file,
            env=self.env,
            tier=self.tier,
            config=self.config,
            stall_timeout_s=self.stall_timeout_s,
            tenant=self.tenant,
            store=store,
        )


# The types of a context window whose primary candidate is kept (``_primary``): a key of
# another type (``True``, ``1.0``) could equal a kept one's and skip its own checks.
_WINDOWS: Final = (int, type(None))


@functools.lru_cache(maxsize=1024)
def _primary(adapter: str, model: str, context_window: int | None) -> Candidate:
    """``TaskSpec.primary`` of a distinct adapter, model and window (a refused one is
    refused each time: errors are not kept)."""
    return Candidate(adapter=adapter, model=model, context_window=context_window)


@functools.lru_cache(maxsize=4096)
def _operation_id(workflow_id: str, task_id: str, run: int, tier_id: str | None) -> str:
    """``TaskSpec.operation_id`` of a task of tier ``tier_id`` (``None``: none)."""
    prefix = "" if tier_id is None else f"{tier_id}-"
    return make_operation_id(workflow_id, task_id, f"{prefix}run_{run:02d}")


@functools.lru_cache(maxsize=4096)
def _attempt_id(operation_id: str, number: int) -> str:
    return make_attempt_id(operation_id, number)


def attempt_id(operation_id: str, number: int) -> str:
    """``backstay.idempotency.ids.attempt_id(operation_id, number)``, kept for the
    attempts in flight: an attempt's id is asked for several times (its reservation,
    charge and records), and each time the operation id is parsed again (2 us). Plain
    strings and numbers only; a refused id is refused each time (errors are not kept)."""
    if type(operation_id) is str and type(number) is int:
        return _attempt_id(operation_id, number)
    return make_attempt_id(operation_id, number)


# The fields of a spec, in order (``TaskSpec.resolved`` copies them).
_FIELDS: Final = tuple(field.name for field in dataclasses.fields(TaskSpec))
