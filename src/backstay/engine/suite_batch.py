"""``SuiteBatch``: a suite run as one batch of the engine, in one state directory.

::

    suite = load_suite("nightly.yaml")
    with Engine("state/", adapters=suite_adapters(suite)) as engine:
        batch = SuiteBatch.open(suite, "state/")
        batch.prepare()                       # each run's workspace, made once
        summary = engine.run_sync(batch.specs)

* **Its name.** The workflow id is the suite's name and a run id. The run id is made when
  the batch first runs and kept in ``<state_dir>/batch.json`` (``BatchIdentity``, with
  the store the batch is recorded in, credentials left out), so the
  same suite run again on the same state directory names the same operations, and the
  engine does not run again what finished. A state directory holds the batch of one
  suite: opening it for another is a ``ConfigError``.
* **Its tasks.** Each run of the suite (task × tier × run, ``Suite.expand``) is one
  ``TaskSpec``: the task's adapter, model, prompt, timeouts and policy; the adapter's
  settings from the suite's ``adapters`` section as its ``config``; the agent's explicit
  environment from ``AdapterOptions.child_env`` (read when the batch is opened) and
  whether it inherits its providers' variables (``inherit_env``: the engine adds them to
  each attempt, those of the attempt's own adapter); and the
  workspace ``<state_dir>/runs/<task>/<tier>/run_NN/workspace``. One spec is built (and
  checked) a task and tier; ``specs`` and ``runs`` make the others when asked for, and
  ``operation_ids()`` names every run without making its spec (``suite_runs``).
* **Its workspaces.** ``prepare()`` makes each workspace that does not exist yet: a copy
  of the task's template folder, or an empty folder. A copy is made beside it and renamed
  into place, so a copy cut short by a crash never passes for a workspace; an existing
  workspace is left as the agent left it.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from backstay._private import make_private_dirs, open_private
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.engine.suite_runs import (
    WORKSPACE_DIR,
    BatchRun,
    RunFamily,
    SuiteRuns,
    SuiteSpecs,
    prepare_workspace,
)
from backstay.errors import ConfigError

# The adapters, the configuration and the task specs are imported where a suite is opened:
# reading a batch's identity (``read_identity``) needs none of them.
if TYPE_CHECKING:
    from backstay.adapters.contract import Adapter, TierConfig
    from backstay.config import Suite, SuiteTask

__all__ = [
    "BATCH_FILE",
    "WORKSPACE_DIR",
    "BatchIdentity",
    "BatchRun",
    "SuiteBatch",
    "read_identity",
    "suite_adapters",
]

BATCH_FILE: Final = "batch.json"
_FORMAT: Final = 1


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BatchIdentity:
    """Which batch a state directory holds: the suite's name and the run id made when it
    first ran (``"20260301T120000Z-3f9a2c"``), where the suite was read from, and
    ``store``: where the batch's records are when not in the state directory itself (a
    Redis URL with any password replaced by ``***``, or another directory); ``gateway``:
    the suite's ``gateway`` (``false``: its agent CLIs go straight to their providers, on
    ``resume`` too)."""

    suite: str
    run_id: str
    created_at: _dt.datetime
    suite_file: str | None = None
    store: str | None = None
    gateway: bool = True

    @property
    def workflow_id(self) -> str:
        """``"{suite}-{run_id}"``: the first part of every operation id of the batch."""
        return f"{self.suite}-{self.run_id}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "suite": self.suite,
            "run_id": self.run_id,
            "workflow_id": self.workflow_id,
            "created_at": self.created_at.isoformat(),
            "suite_file": self.suite_file,
            "store": self.store,
            "gateway": self.gateway,
        }


def read_identity(state_dir: str | os.PathLike[str]) -> BatchIdentity | None:
    """The identity kept in ``state_dir``; ``None`` when there is none, ``ConfigError``
    naming the file when it cannot be read."""
    path = Path(state_dir) / BATCH_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot be read: {exc.strerror or exc}", where=str(path)) from None
    except UnicodeDecodeError:
        text = ""  # not UTF-8 text: damaged, as a truncated file is
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError("unknown format")  # noqa: TRY301 - one message for every defect
        gateway = data.get("gateway", True)  # a batch file from before it was kept
        if not isinstance(gateway, bool):
            raise TypeError("gateway")  # noqa: TRY301 - one message for every defect
        return BatchIdentity(
            suite=str(data["suite"]),
            run_id=str(data["run_id"]),
            created_at=_dt.datetime.fromisoformat(data["created_at"]),
            suite_file=data.get("suite_file"),
            store=data.get("store"),
            gateway=gateway,
        )
    except (ValueError, KeyError, TypeError):
        raise ConfigError(
            "is damaged or was written by another program: not a backstay batch file",
            where=str(path),
        ) from None


def _new_run_id(clock: Clock) -> str:
    # A timestamp to read, and a random part: two batches started in one second differ.
    return f"{clock.now().astimezone(_dt.UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def _keep_identity(state_dir: Path, wanted: BatchIdentity) -> BatchIdentity:
    """Write ``wanted`` unless the directory already names a batch; the one kept.

    Written whole to a private file, then linked into place: two batches started together
    on one directory agree on the identity the first link made."""
    make_private_dirs(state_dir)
    path = state_dir / BATCH_FILE
    temporary = state_dir / f".{BATCH_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = open_private(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(json.dumps(wanted.to_dict(), indent=2) + "\n")
    try:
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        temporary.unlink()
    kept = read_identity(state_dir)
    if kept is None:  # removed between the link and the read: nothing sensible to do
        raise ConfigError("disappeared while the batch was opened", where=str(path))
    return kept


def _identity_for(
    state_dir: Path, suite: Suite, *, clock: Clock = SYSTEM_CLOCK, store: str | None = None
) -> BatchIdentity:
    """The identity of ``suite``'s batch in ``state_dir``: the one kept there, or a new
    one (kept from now on). ``ConfigError`` when the directory holds another suite's."""
    if state_dir.exists() and not state_dir.is_dir():
        raise ConfigError("is not a directory", where=str(state_dir))
    kept = read_identity(state_dir)
    if kept is None:
        kept = _keep_identity(
            state_dir,
            BatchIdentity(
                suite=suite.name,
                run_id=_new_run_id(clock),
                created_at=clock.now(),
                suite_file=None if suite.file is None else str(Path(suite.file).resolve()),
                store=store,
                gateway=suite.gateway,
            ),
        )
    if kept.suite != suite.name:
        raise ConfigError(
            f"holds the batch of suite {kept.suite!r} (workflow {kept.workflow_id}), not of "
            f"suite {suite.name!r}: give each suite its own state directory",
            where=str(state_dir),
        )
    from backstay.config import workflow_id  # noqa: PLC0415 - see the imports

    workflow_id(suite, kept.run_id)  # the run id read back must still make a valid id
    return kept


def _run_dir(root: Path, task_id: str, tier: TierConfig | None) -> str:
    """``TaskSpec.run_dir(root)`` of a spec of ``task_id`` and ``tier``, without its last
    part (``run_NN``)."""
    from backstay.engine.task import NO_TIER_DIR  # noqa: PLC0415 - see the imports

    tier_dir = NO_TIER_DIR if tier is None else tier.tier_id
    return f"{root}/runs/{task_id}/{tier_dir}"


def suite_adapters(suite: Suite) -> dict[str, Adapter]:
    """One adapter per adapter name the suite's tasks use (``get_adapter``); a
    ``ConfigError`` for one that cannot be had (not installed, not available yet)."""
    from backstay.adapters.registry import get_adapter  # noqa: PLC0415 - see the imports

    return {name: get_adapter(name) for name in _adapter_names(suite)}


def _adapter_names(suite: Suite) -> list[str]:
    """Every adapter a task may run on: its own, and its fallbacks'."""
    names = {task.adapter for task in suite.tasks}
    names.update(str(c.adapter) for task in suite.tasks for c in task.fallbacks)
    return sorted(names)


def _chain_env(
    task: SuiteTask, envs: Mapping[str, Mapping[str, str]], source: Mapping[str, str]
) -> dict[str, str]:
    """The environment of a task's runs: its adapter's, then what its fallbacks' adapters
    and credential variables add (a credential variable that is not set: ``ConfigError``)."""
    env = dict(envs[task.adapter])
    for i, candidate in enumerate(task.fallbacks):
        for name, value in envs[str(candidate.adapter)].items():
            env.setdefault(name, value)
        variable = candidate.api_key_env
        if variable is not None and variable not in env:
            if variable not in source:
                raise ConfigError(
                    f"{variable} is not set (the key of fallback {candidate.name})",
                    where=f"task {task.id!r}: fallbacks[{i}].api_key_env",
                )
            env[variable] = source[variable]
    return env


def _chain_inherits(suite: Suite, task: SuiteTask) -> bool:
    """Whether a task's runs inherit their providers' variables: only when the options of
    every adapter of its chain allow it, so an adapter kept isolated (``inherit_env:
    false``) is never given them as a fallback either."""
    adapters = {task.adapter, *(str(c.adapter) for c in task.fallbacks)}
    return all(suite.options_for(name).inherit_env for name in adapters)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SuiteBatch:
    """A suite's runs as the engine's task specs; see the module docstring."""

    suite: Suite
    state_dir: Path
    identity: BatchIdentity
    runs: SuiteRuns

    @classmethod
    def open(
        cls,
        suite: Suite,
        state_dir: str | os.PathLike[str],
        *,
        environ: Mapping[str, str] | None = None,
        clock: Clock = SYSTEM_CLOCK,
        inherit_env: bool = True,
        store: str | None = None,
    ) -> SuiteBatch:
        """The batch of ``suite`` in ``state_dir`` (its identity kept there from now on).
        Each agent's explicit environment (``api_key_env``, ``pass_env``) is read from
        ``environ`` (default: this process's); an API key variable that is not set is a
        ``ConfigError``, raised before anything is written. A task inherits its provider's
        variables when the engine runs it (each fallback candidate those of its own
        adapter's provider), unless the options of an adapter of its chain say
        ``inherit_env: false`` or ``inherit_env`` is false here (``--isolated-env``).
        ``store``: where the batch is recorded, kept in a new ``batch.json`` (never with
        a password: ``StoreLocation.display``); ``None``: in the state directory."""
        from backstay.adapters.limits import apply_task_limits  # noqa: PLC0415 - see the imports
        from backstay.adapters.registry import adapter_class  # noqa: PLC0415
        from backstay.engine.task import TaskSpec  # noqa: PLC0415

        source = os.environ if environ is None else environ
        envs = {name: suite.options_for(name).child_env(source) for name in _adapter_names(suite)}
        root = Path(state_dir).resolve()
        identity = _identity_for(root, suite, clock=clock, store=store)
        families = []
        start = 0
        # ``suite.expand()``'s order (task by task, tier by tier, run 1 to ``runs``), one
        # family of runs a task and tier: its first run's spec is built (and checked)
        # whole, the others when they are asked for (``SuiteRuns``).
        for task in suite.tasks:
            options = suite.options_for(task.adapter)
            for tier in task.tiers:
                run_dir = _run_dir(root, task.id, tier)
                spec = TaskSpec(
                    workflow_id=identity.workflow_id,
                    task_id=task.id,
                    run=1,
                    tier=tier,
                    adapter=task.adapter,
                    model=task.model,
                    workspace=Path(f"{run_dir}/run_01/{WORKSPACE_DIR}"),
                    timeout_s=task.timeout_s,
                    stall_timeout_s=task.stall_timeout_s,
                    prompt=task.prompt,
                    prompt_file=task.prompt_file,
                    env=_chain_env(task, envs, source),
                    config=apply_task_limits(
                        adapter_class(task.adapter), options.config, task.limits
                    )
                    if task.limits
                    else options.config,
                    policy=task.policy,
                    budget=task.budget,
                    tenant=task.tenant,
                    fallbacks=task.fallbacks,
                    context_window=task.context_window,
                    limits=task.limits,
                    inherit_env=inherit_env and _chain_inherits(suite, task),
                    keep_prompt=suite.keep_prompts,
                )
                families.append(
                    RunFamily(
                        start=start,
                        first=spec,
                        runs=task.runs,
                        template=task.workspace,
                        run_dir=run_dir,
                    )
                )
                start += task.runs
        return cls(suite=suite, state_dir=root, identity=identity, runs=SuiteRuns(tuple(families)))

    @property
    def workflow_id(self) -> str:
        return self.identity.workflow_id

    @property
    def specs(self) -> SuiteSpecs:
        """Every run's spec, in order, each made when it is asked for."""
        return self.runs.specs

    def operation_ids(self) -> Sequence[str]:
        """Every run's operation id, in order, without making the specs."""
        return self.runs.specs.operation_ids()

    def prepare(self) -> int:
        """Make every workspace that does not exist yet; how many were made."""
        return sum(run.prepare() for run in self.runs)

    def prepare_range(self, start: int, stop: int) -> None:
        """Make the workspaces of runs ``start`` to ``stop`` (``EarlyStart.before_page``:
        a batch recorded a page at a time makes each page's workspaces before it records
        the page, so a recorded task always has its workspace)."""
        for workspace, template in self.runs.workspaces(start, stop):
            prepare_workspace(workspace, template)
