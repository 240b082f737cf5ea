"""``Engine``: runs a batch of tasks durably, and resumes it after a crash.

(About 680 lines: the file is the ``Engine`` class alone, whose wiring of stores,
gates and guards and whose run and resume loops read as one; its rules live elsewhere.)

::

    engine = Engine("state/", adapters={"mock": MockAdapter()}, concurrency=4)
    summary = engine.run_sync(specs)      # or: await engine.run(specs)
    ...                                   # the process dies; later, maybe elsewhere:
    summary = Engine("state/", ...).resume_sync()

Everything lives in the state directory: ``state.sqlite`` holds the tasks, attempts and
escalations (``SQLiteTaskStore``) and the operations' leases and result cache
(``SQLiteOperationStore``); ``runs/<task_id>/<tier>/run_NN/attempt_N/`` holds each
attempt's logs and ``metrics.json``.

Each task runs under ``IdempotencyGuard.run(operation_id, …)``: a runner first claims the
operation, so two runners (two processes, two machines on a shared file) never run one
task at once; a runner that finds the operation done takes its cached result instead. A
claimed task is taken up as ``backstay.engine.resume.plan_start`` says and driven by
``TaskDriver``. At most ``concurrency`` tasks are driven at once.

Adapters, policies and adapter settings are resolved and checked for every task before
anything is recorded or run, so a mistake in the batch is a ``ConfigError`` up front
(each distinct setting checked once). The batch is then recorded whole
(``TaskStore.register_each``, read a page at a time: a runner killed on the way leaves a
batch not started, or on Redis one whose commit ``resume`` finishes), then its tasks are
driven; or, with ``run(specs, early=EarlyStart(...))``, a page at a time while the first
tasks are driven (``backstay.engine.registration``; ``finish_registration`` records what a
killed runner left). The engine holds the operation ids only: each
task's record is read when the task is driven, and its spec is taken from ``specs`` then
(a sequence is indexed, never copied; a lazy one keeps a batch of any size out of memory).

Before each attempt the driver asks the task's circuit breaker (``CircuitGate``, one per
adapter and model by default, kept in ``state.sqlite``); while it is open the task waits,
recorded in the circuit log, without spending an attempt. ``breaker=None`` turns that off.

Spending budgets (``budget``, ``tenant_budgets``, and each spec's own) are checked before
each attempt with its estimate and charged with its real use after it, in ``state.sqlite``
(``BudgetGate``, docs/budgets.md); a task whose next attempt does not fit is paused with
reason ``budget_exceeded``, and runs again once the budgets have room.

Client-side rate limits (``rate_limits``) pace each attempt whose adapter or provider has
one, and a retry budget (``retry_budget``) caps the retries of all tasks together
(``backstay.engine.pacing``); both are kept where the stores are (Redis: fleet-wide).

A spec with ``fallbacks`` runs each attempt on a candidate of its chain
(``backstay.engine.fallback``), under ``fallback_rules``; the candidates' cooldowns are
kept in ``state.sqlite`` beside the breakers. Budgets estimate and charge each attempt
as the candidate it runs on. A task that inherits its provider's variables
(``TaskSpec.inherit_env``) gets them from ``env`` when it is taken up, each candidate
those of its own adapter; they are never recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from backstay._checks import check_number
from backstay.adapters.api._clients import shared_clients
from backstay.adapters.contract import Adapter
from backstay.adapters.harness.config import check_settings
from backstay.adapters.provider_env import agent_env
from backstay.adapters.registry import get_adapter
from backstay.breaker.settings import BreakerSettings
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.engine import _notify as notify
from backstay.engine._checked_settings import CheckedSettings
from backstay.engine._prompt_source import PromptSource
from backstay.engine._spec_codec import missing_secret
from backstay.engine._stored_tasks import StoredTasks
from backstay.engine.attempt_spend import AttemptSpendStore
from backstay.engine.budgets import BudgetGate
from backstay.engine.circuit_log import CircuitLog
from backstay.engine.circuits import BreakerKeyFn, CircuitGate
from backstay.engine.circuits import breaker_key as default_breaker_key
from backstay.engine.controls import Revoker, TaskControls
from backstay.engine.driver import TaskDriver, TaskStopped
from backstay.engine.escalations import EscalationQueue
from backstay.engine.executor import DEFAULT_CONCURRENCY, Executor
from backstay.engine.fallback import TaskFallback, candidate_config
from backstay.engine.pacing import Pacing, engine_pacing
from backstay.engine.records import StateChange, TaskRecord
from backstay.engine.registration import (
    EarlyStart,
    PagedRegistration,
    PageFeed,
    StagedCommit,
    check_same_batch,
    checked_families,
)
from backstay.engine.resume import StartStep, plan_start
from backstay.engine.spend_ledger import SpendLedger
from backstay.engine.states import TaskState
from backstay.engine.stores import StoreBundle
from backstay.engine.summary import Summary, summarize, summarize_pages
from backstay.engine.task import TaskSpec, check_identifier
from backstay.engine.task_index import TaskFilter, TaskIndex
from backstay.engine.taskstore import TaskStore
from backstay.errors import ConfigError
from backstay.events import EVENTS_FILE, recording
from backstay.fallback.rules import FallbackRules
from backstay.idempotency.errors import LeaseLost, OperationInProgress
from backstay.idempotency.guard import IdempotencyGuard
from backstay.idempotency.settings import GuardSettings
from backstay.idempotency.store import OperationStore
from backstay.policy.budget import BudgetSettings
from backstay.policy.ratelimit import RateLimitSettings
from backstay.policy.registry import OperationType, PolicyRegistry, current_registry
from backstay.policy.retry import RetryPolicy
from backstay.policy.spend import BATCH_SCOPE, ScopeKind, ScopeTotals, SpendBudget, SpendScope
from backstay.store.location import StoreKind, StoreLocation

__all__ = ["DEFAULT_BREAKER", "DEFAULT_CONCURRENCY", "AdapterSource", "Engine"]

# The circuit breaker every engine has unless told otherwise (docs/design/breaker.md).
DEFAULT_BREAKER: Final = BreakerSettings()
AdapterSource = Adapter | Callable[[], Adapter]
_CACHED_REASON: Final = "succeeded: the operation's cached result was adopted"
# Tasks read at once to add up a summary (``summarize_pages``).
_SUMMARY_PAGE: Final = 1000


class Engine:
    """A durable batch runner over ``state_dir``; see the module docstring.

    * ``adapters``: adapter name → an ``Adapter`` instance, or a factory called once;
      names not given come from ``backstay.adapters.get_adapter``.
    * ``policies``: where a spec's policy name is looked up (default: the current
      registry); a spec without a policy uses the registry's policy for agent runs.
    * ``env``: where the secret environment variables of resumed tasks, and the provider
      variables a task inherits (``TaskSpec.inherit_env``), come from (default: this
      process's environment); they are never written to the state file.
    * ``guard_settings``, ``owner``: the operation leases (``IdempotencyGuard``).
    * ``breaker``: the settings of the circuit breakers asked before each attempt, one per
      ``breaker_key(spec)`` (default ``(adapter, model)``); ``None``: no breakers.
    * ``budget``: the spending budget of the batch (every task of the state directory),
      and ``tenant_budgets`` those of tenants (the tasks whose spec names the tenant); kept
      in the state file, so ``None`` / a tenant left out keeps the budget kept there, and
      ``SpendBudget()`` removes it.
    * ``fallback_rules``: the move table of specs with ``fallbacks`` (docs/fallback.md).
    * ``event_log``: while it drives tasks, append their events to ``events.jsonl`` in
      ``state_dir`` (``backstay.observe.EventLog``, redacted).
    * ``executor``: where the tasks are driven (``backstay.engine.executor``); default
      ``None``: here, at most ``concurrency`` at once.
    * ``rate_limits``, ``retry_budget``: the attempts' rate limits by key and the tasks'
      retry budget (``backstay.engine.pacing``); default: neither.
    * ``stores``: the stores to keep the state in (``backstay.store.location``), owned and
      closed by the engine; default: SQLite in ``state_dir``. ``state_dir`` still holds the
      runs' artefacts either way.
    """

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        *,
        adapters: Mapping[str, AdapterSource] | None = None,
        policies: PolicyRegistry | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        clock: Clock = SYSTEM_CLOCK,
        guard_settings: GuardSettings | None = None,
        env: Mapping[str, str] | None = None,
        owner: str | None = None,
        breaker: BreakerSettings | None = DEFAULT_BREAKER,
        breaker_key: BreakerKeyFn = default_breaker_key,
        budget: SpendBudget | None = None,
        tenant_budgets: Mapping[str, SpendBudget] | None = None,
        fallback_rules: FallbackRules | None = None,
        event_log: bool = True,
        executor: Executor | None = None,
        stores: StoreBundle | None = None,
        rate_limits: Mapping[str, RateLimitSettings] | None = None,
        retry_budget: BudgetSettings | None = None,
    ) -> None:
        check_number(concurrency, where="concurrency", minimum=1, integer=True)
        if breaker is not None and not isinstance(breaker, BreakerSettings):
            raise ConfigError(
                f"must be a BreakerSettings or None, got {type(breaker).__name__}",
                where="breaker",
            )
        if adapters is not None and not isinstance(adapters, Mapping):
            raise ConfigError("must map adapter names to adapters", where="adapters")
        if policies is not None and not isinstance(policies, PolicyRegistry):
            raise ConfigError(f"must be a PolicyRegistry, got {policies!r}", where="policies")
        if executor is not None and not isinstance(executor, Executor):
            raise ConfigError(f"must be an Executor or None, got {executor!r}", where="executor")
        budgets = _budget_scopes(budget, tenant_budgets)
        # Absolute: attempt directories are recorded, and tag the agents' processes.
        self.state_dir = Path(state_dir).absolute()
        self.clock = clock
        self.concurrency = concurrency
        self._environ: Mapping[str, str] = os.environ if env is None else env
        if stores is None:
            # The one engine -> store arrow, for the Engine(state_dir) one-liner.
            from backstay.store.open import open_stores  # noqa: PLC0415

            stores = open_stores(
                StoreLocation.sqlite(self.state_dir),
                state_dir=self.state_dir,
                clock=clock,
                secrets=self._environ,
            )
        elif not isinstance(stores, StoreBundle):
            raise ConfigError(f"must be a StoreBundle, got {type(stores).__name__}", where="stores")
        elif stores.clock is not None and clock is SYSTEM_CLOCK:
            # A shared store's records are stamped on the store's time line.
            clock = self.clock = stores.clock
        self.stores = stores
        self.store: TaskStore = stores.tasks
        self.operations: OperationStore = stores.operations
        self.spend: SpendLedger = stores.spend
        self.circuit_log: CircuitLog = stores.circuit_log
        try:
            for scope, limit in budgets.items():
                self.spend.set_budget(scope, limit, at=clock.now())
            self.budgets = BudgetGate(self.spend, clock=clock)
            # Kept as settings too: an executor's workers pace and budget with the same.
            self.rate_limits = dict(rate_limits or {})
            self.retry_budget = retry_budget
            self.pacing: Pacing | None = engine_pacing(
                stores, rate_limits=rate_limits, retry_budget=retry_budget, clock=clock
            )
            self.circuits = (
                None
                if breaker is None
                else CircuitGate(
                    breaker,
                    log=self.circuit_log,
                    store=stores.breakers,
                    clock=clock,
                    key=breaker_key,
                    owner=owner,
                )
            )
        except BaseException:
            stores.close()
            raise
        self.fallback_rules = FallbackRules() if fallback_rules is None else fallback_rules
        self.guard = IdempotencyGuard(
            self.operations, settings=guard_settings, owner=owner, clock=clock
        )
        self.escalations = EscalationQueue(self.store, clock=clock)
        revoker = self.operations if isinstance(self.operations, Revoker) else None
        self.controls = TaskControls(self.store, leases=revoker, clock=clock)
        self._sources: dict[str, AdapterSource] = dict(adapters or {})
        self._adapters: dict[str, Adapter] = {}
        self._policies = policies
        self.event_log = event_log
        self.executor = executor
        self.breaker = breaker  # the circuits' settings, for engines opened elsewhere
        self._prompts = PromptSource(self.state_dir)
        # The settings the drivers built so far passed (each task's driver checks its spec
        # as ``_check`` does; a setting that passed is not checked again for the next task).
        self._driven = CheckedSettings()
        self._attempt_spend = _attempt_spend(stores)

    # -- resolving a spec ---------------------------------------------------------------

    def adapter(self, name: str) -> Adapter:
        """The engine's adapter called ``name`` (made once, then reused)."""
        found = self._adapters.get(name)
        if found is not None:
            return found
        source = self._sources.get(name)
        if source is None:
            made = get_adapter(name)
        elif isinstance(source, type) or not isinstance(source, Adapter):
            made = source()
        else:
            made = source
        if not isinstance(made, Adapter):
            raise ConfigError(f"{made!r} is not an Adapter", where=f"adapters.{name}")
        self._adapters[name] = made
        return made

    def policy_for(self, spec: TaskSpec) -> RetryPolicy:
        """The retry policy ``spec`` runs under."""
        registry = self._policies or current_registry()
        if isinstance(spec.policy, RetryPolicy):
            return spec.policy
        if isinstance(spec.policy, str):
            return registry.get(spec.policy)
        return registry.for_operation(OperationType.AGENT)

    def _check(self, spec: TaskSpec) -> tuple[TaskSpec, Adapter]:
        """What building ``spec``'s driver checks (its prompt, adapter, settings and
        fallbacks' settings), raising what it would; the restored spec and its adapter.
        A batch checks every task before it registers them, and builds each task's driver
        only when the task is driven, so it never holds a driver per task."""
        # A prompt the state keeps redacted is read again from its suite file (checked).
        spec = self._prompts.restore(spec)
        adapter = self.adapter(spec.adapter)
        try:
            check_settings(spec.config, adapter=adapter)
        except ConfigError as err:
            raise ConfigError(err.reason, where=f"task {spec.task_id!r}: {err.where}") from None
        self._fallback_adapters(spec)
        return spec, adapter

    def _driver(self, spec: TaskSpec) -> TaskDriver:
        if self._driven.known(spec):  # its settings passed for an earlier task
            spec = self._prompts.restore(spec)
            adapter = self.adapter(spec.adapter)
        else:
            spec, adapter = self._check(spec)
            self._driven.passed(spec)
        # The provider variables are added now, for this run only: never recorded.
        resolved = spec.resolved(self._agent_env(adapter, spec))
        chain = self._fallback(spec, resolved)
        return TaskDriver(
            resolved,
            adapter=adapter,
            policy=self.policy_for(spec),
            store=self.store,
            clock=self.clock,
            state_dir=self.state_dir,
            circuits=self.circuits,
            budgets=self.budgets,
            fallback=chain,
            pacing=self.pacing,
            location=self.store_location,
            attempt_spend=self._attempt_spend,
        )

    @property
    def store_location(self) -> StoreLocation:
        """Where the batch's records are (a SQLite location names its directory); the
        engine gives it to every attempt (``AgentRequest.store``)."""
        location = self.stores.location
        if location.kind is StoreKind.SQLITE and location.path is None:
            return dataclasses.replace(location, path=self.state_dir)
        return location

    def _agent_env(self, adapter: Adapter, spec: TaskSpec) -> dict[str, str]:
        """The whole environment of an attempt of ``spec`` on ``adapter``: ``spec.env`` over
        the variables of that adapter's provider when the spec inherits them."""
        return agent_env(adapter, spec.env, environ=self._environ, inherit=spec.inherit_env)

    def _fallback(self, spec: TaskSpec, resolved: TaskSpec) -> TaskFallback | None:
        """The chain of a spec with fallbacks (``resolved``: the spec with its own adapter's
        whole environment), with its candidates' adapters and environments, each config
        checked; ``None`` for a spec without."""
        if not spec.fallbacks:
            return None
        adapters = self._fallback_adapters(spec)
        return TaskFallback(
            resolved,
            rules=self.fallback_rules,
            store=self.stores.fallback,
            gate=self.circuits,
            clock=self.clock,
            adapters=adapters,
            envs={name: self._agent_env(a, spec) for name, a in adapters.items()},
        )

    def _fallback_adapters(self, spec: TaskSpec) -> dict[str, Adapter]:
        """The adapters of ``spec``'s fallbacks, by name, each candidate's config checked."""
        adapters: dict[str, Adapter] = {}
        for i, candidate in enumerate(spec.fallbacks):
            adapter = adapters[str(candidate.adapter)] = self.adapter(str(candidate.adapter))
            try:
                check_settings(candidate_config(spec, candidate), adapter=adapter)
            except ConfigError as err:
                where = f"task {spec.task_id!r}: fallbacks[{i}]: {err.where}"
                raise ConfigError(err.reason, where=where) from None
        return adapters

    # -- running ------------------------------------------------------------------------

    async def run(self, specs: Iterable[TaskSpec], *, early: EarlyStart | None = None) -> Summary:
        """Record ``specs`` (known tasks keep their state) and drive them until each has
        succeeded, failed, or stopped to wait (paused, escalated); their summary.

        A sequence is read three times (checked, recorded, then each spec as its task is
        driven) and never copied; any other iterable is read into a tuple first. With
        ``early`` (on a store that records in pages), the first tasks are driven while
        the next pages are recorded (``backstay.engine.registration``)."""
        chosen = specs if isinstance(specs, Sequence) else tuple(specs)
        order = self._checked(chosen)
        at = self.clock.now()
        if early is not None and isinstance(self.store, PagedRegistration):
            feed = PageFeed(self.store, chosen, order, early=early, at=at)
            if self.executor is not None:
                feed.record_all()
            else:
                feed.record_next()  # the first page, before any task is driven
                await self._drive_all((), operations=order, feed=feed)
                return self.summary(order)
        else:
            self.store.register_each(chosen, at=at)
        if self.executor is not None:
            await self.executor.drive(self, StoredTasks(self.store, order))
        else:
            await self._drive_all(self._registered(chosen), operations=order)
        return self.summary(order)

    def finish_registration(self, specs: Sequence[TaskSpec], *, early: EarlyStart) -> int:
        """Record what is left of a batch whose paged recording was cut short (``specs``:
        its tasks, as ``run`` was given them: ``ConfigError`` when their operation ids
        are not the recorded batch's); how many tasks were recorded now (0 when none was
        left). Every spec is checked first, as ``run`` checks them."""
        header = self.store.registration() if isinstance(self.store, PagedRegistration) else None
        if header is None:
            return 0
        order = self._checked(specs)
        check_same_batch(header, order)
        feed = PageFeed(
            self.store,
            specs,
            order,
            early=early,
            at=self.clock.now(),
            start=header.recorded,
            header=header,
        )
        return feed.record_all()

    def _checked(self, specs: Sequence[TaskSpec]) -> list[str]:
        """The operation ids of ``specs`` in order, each spec checked as building its
        driver would check it (``ConfigError`` naming the first that is wrong)."""
        families = checked_families(specs, self._check)  # a suite's: one check a family
        if families is not None:
            return families
        order: list[str] = []
        seen: set[str] = set()
        checked = CheckedSettings()  # each distinct setting checked once
        for i, spec in enumerate(specs):
            if not isinstance(spec, TaskSpec):
                raise ConfigError(
                    f"must be a TaskSpec, got {type(spec).__name__}", where=f"specs[{i}]"
                )
            if spec.operation_id in seen:
                raise ConfigError(f"{spec.operation_id!r} is given twice", where=f"specs[{i}]")
            seen.add(spec.operation_id)
            order.append(spec.operation_id)
            if checked.known(spec):
                self._prompts.restore(spec)
            else:
                self._check(spec)
                checked.passed(spec)
        return order

    def _registered(self, specs: Sequence[TaskSpec]) -> Iterator[tuple[TaskSpec, TaskRecord]]:
        """Each of ``specs`` with its record, read from the store as a worker takes it."""
        for spec in specs:
            record = self.store.task(spec.operation_id)
            if record is None:  # pragma: no cover - registered above, never removed
                raise LookupError(f"task {spec.operation_id!r} was never registered")
            yield spec, record

    async def resume(self) -> Summary:
        """Drive every task of the state directory that can run now (see
        ``backstay.engine.resume``); the summary of all of them."""
        if isinstance(self.store, StagedCommit):
            self.store.finish_staged()  # a batch whose commit a killed runner left
        order: list[str] = []
        for record in self._stored():  # every one checked before any is driven
            if self._to_drive(record):
                if record.missing_env:
                    raise missing_secret(record.task_id, record.missing_env)
                self._check(record.spec)
                order.append(record.operation_id)
        stored = StoredTasks(self.store, order)
        if self.executor is not None:
            await self.executor.drive(self, stored)
        else:
            await self._drive_all(((r.spec, r) for r in stored), operations=order)
        return self.summary()

    def _stored(self) -> Iterator[TaskRecord]:
        """Every stored task, a page at a time on a store with an index."""
        if isinstance(self.store, TaskIndex):
            for page in self.store.pages(TaskFilter(), size=_SUMMARY_PAGE):
                yield from page
        else:
            yield from self.store.tasks()

    async def drive_task(self, operation_id: str) -> TaskRecord:
        """Drive the stored task ``operation_id`` as ``run`` and ``resume`` drive each of
        theirs (under its operation lease, taken up as ``plan_start`` says), recording its
        events in ``events.jsonl`` when ``event_log``; the task as stored afterwards. This
        is what an ``Executor`` runs for each task, in whatever process it places it.
        ``LookupError`` for a task never registered; ``ConfigError`` when its secret
        variables are not in this engine's ``env``."""
        record = self.store.task(operation_id)
        if record is None:
            raise LookupError(f"task {operation_id!r} was never registered")
        if not self._to_drive(record):
            return record
        if record.missing_env:
            raise missing_secret(record.task_id, record.missing_env)
        self._check(record.spec)
        with contextlib.ExitStack() as stack:
            if self.event_log:
                stack.enter_context(recording(self.state_dir / EVENTS_FILE, [operation_id]))
            await self._drive_one(record.spec, record)
        found = self.store.task(operation_id)
        assert found is not None  # noqa: S101 - a task is never removed
        return found

    def run_sync(self, specs: Iterable[TaskSpec], *, early: EarlyStart | None = None) -> Summary:
        """``run`` for callers outside asyncio."""
        return asyncio.run(self.run(specs, early=early))

    def resume_sync(self) -> Summary:
        """``resume`` for callers outside asyncio."""
        return asyncio.run(self.resume())

    def summary(self, operation_ids: Iterable[str] | None = None) -> Summary:
        """The summary of the given tasks (all of the state directory by default)."""
        if isinstance(self.store, TaskIndex):  # a page at a time: flat in the batch's size
            wanted_ids = None if operation_ids is None else set(operation_ids)
            pages = (
                page if wanted_ids is None else [t for t in page if t.operation_id in wanted_ids]
                for page in self.store.pages(TaskFilter(), size=_SUMMARY_PAGE)
            )
            return summarize_pages(
                pages,
                self.store.attempts_of,
                self.store.escalations(open_only=True),
                circuits=self.circuit_log.entries(),
                spending=self.spend.overview(),
            )
        tasks = self.store.tasks()
        if operation_ids is not None:
            wanted = set(operation_ids)
            tasks = tuple(t for t in tasks if t.operation_id in wanted)
        return summarize(
            tasks,
            self.store.attempts(),
            self.store.escalations(),
            circuits=self.circuit_log.entries(),
            spending=self.spend.overview(),
        )

    def spending(self) -> tuple[ScopeTotals, ...]:
        """The batch's and each tenant's budget, spent and reserved amounts."""
        return self.spend.overview()

    async def _drive_all(
        self,
        work: Iterable[tuple[TaskSpec, TaskRecord]],
        *,
        operations: Collection[str],
        feed: PageFeed | None = None,
    ) -> None:
        # ``concurrency`` workers take the tasks in order from one iterator (``work``, one
        # entry per operation of ``operations``, each made as a worker takes it), so only
        # as many asyncio tasks, specs and records exist at once as run (not one per task
        # of a batch of 100,000); each task is driven in an asyncio task of its own, so
        # its context variables never carry over to the next one.
        queue = iter(work)

        async def worker() -> None:
            for spec, record in queue:
                await asyncio.ensure_future(self._drive_one(spec, record))
            # ``feed``: the tasks of a batch recorded meanwhile, each once its page is in.
            while feed is not None and (taken := await feed.take()) is not None:
                await asyncio.ensure_future(self._drive_one(*taken))

        with contextlib.ExitStack() as stack:
            if self.event_log and operations:
                stack.enter_context(recording(self.state_dir / EVENTS_FILE, operations))
            try:
                # One SDK client per API adapter, model, base URL and key for all the
                # tasks, closed when they are done (backstay.adapters.api._clients).
                async with shared_clients(), asyncio.TaskGroup() as group:
                    if feed is not None:
                        group.create_task(feed.produce())
                    for _ in range(min(self.concurrency, len(operations))):
                        group.create_task(worker())
            except BaseExceptionGroup as failed:
                raise failed.exceptions[0] from failed

    async def _drive_one(self, spec: TaskSpec, record: TaskRecord) -> None:
        """Drive one task, unless ``record`` (read before its lease is claimed; the driver
        takes it up as it is under the operation's first lease, else reads it again under
        the lease) says it needs nothing; its driver is built now and dropped when it
        ends."""
        if not self._to_drive(record):
            return
        driver = self._driver(spec)
        driver.read_before = record  # read just now, before the lease is claimed
        op = driver.operation_id
        try:
            # An adapter declares itself idempotent or not (``idempotent``, default not);
            # a non-idempotent one runs only under its operation id.
            if getattr(driver.adapter, "idempotent", False) is True:
                result = await self.guard.run(op, driver.drive)
            else:
                result = await self.guard.run_non_idempotent(op, driver.drive)
        except (TaskStopped, OperationInProgress, LeaseLost):
            return  # the store says where the task stands
        if not driver.succeeded:  # the result came from the operation cache
            self._adopt(op, result, driver.policy.name)

    def _to_drive(self, record: TaskRecord) -> bool:
        """Whether ``record`` needs its driver now: it can run, or it succeeded but was
        killed before its result reached the operation cache (cached now, not run)."""
        if plan_start(record, self.clock.now()).step is not StartStep.SKIP:
            return True
        return (
            record.state is TaskState.SUCCEEDED and self.operations.get(record.operation_id) is None
        )

    def _adopt(self, op: str, result: Mapping[str, Any], policy: str) -> None:
        """Record a task whose operation completed elsewhere (its result was cached while
        the task store had not caught up) as succeeded, without dispatching it."""
        record = self.store.task(op)
        if record is None or record.state is TaskState.SUCCEEDED:
            return
        now = self.clock.now()
        if record.state is TaskState.RUNNING:
            record = self.store.recover_interrupted(op, at=now)
        if record.state not in (TaskState.PENDING, TaskState.RETRYING):
            return
        self.store.change_state(
            op, StateChange(state=TaskState.RUNNING, reason="adopting a cached result", at=now)
        )
        change = StateChange(
            state=TaskState.SUCCEEDED, reason=_CACHED_REASON, at=now, result=result
        )
        notify.succeeded(self.store.change_state(op, change), policy=policy, from_cache=True)

    # -- lifetime -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the stores' connections."""
        try:
            if self.circuits is not None:
                self.circuits.close()
        finally:
            self.stores.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _attempt_spend(stores: StoreBundle) -> AttemptSpendStore | None:
    """Where an attempt's spend goes with its begin and end transactions: the stores' own
    (``backstay.engine.attempt_spend``) when they have one and it writes to their ledger."""
    joint = stores.attempt_spend
    return joint if joint is not None and joint.keeps(stores.spend) else None


def _budget_scopes(
    budget: SpendBudget | None, tenants: Mapping[str, SpendBudget] | None
) -> dict[SpendScope, SpendBudget]:
    """The batch and tenant budgets to keep, checked (``ConfigError`` naming the one)."""
    out: dict[SpendScope, SpendBudget] = {}
    if budget is not None:
        if not isinstance(budget, SpendBudget):
            raise ConfigError(
                f"must be a SpendBudget or None, got {type(budget).__name__}", where="budget"
            )
        out[BATCH_SCOPE] = budget
    if tenants is not None and not isinstance(tenants, Mapping):
        raise ConfigError("must map tenant names to SpendBudget", where="tenant_budgets")
    for name, limit in (tenants or {}).items():
        check_identifier(name, where="tenant_budgets (a tenant name)")
        if not isinstance(limit, SpendBudget):
            raise ConfigError(
                f"must be a SpendBudget, got {type(limit).__name__}", where=f"tenant_budgets.{name}"
            )
        out[SpendScope(kind=ScopeKind.TENANT, name=name)] = limit
    return out
