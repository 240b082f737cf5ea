"""``run_harness_chain``: one harness run (``backstay run``) over a fallback chain.

The run's own adapter and model are the first candidate, its ``--fallback`` s the next.
Each attempt runs on the candidate ``FallbackChain`` picks (the same rules, breakers and
cooldowns as everywhere: ``backstay.fallback``), through that candidate's adapter
(``dispatch``), through the same frame as ``BaseAdapter.arun`` (``run_captured``,
``captured_attempt``): the run's files in ``output_dir`` hold every attempt and, under a
policy, each attempt also has its own in ``output_dir/attempt_N/``; without one
(``--no-retry``, ``--policy none``) the run makes one attempt across the whole chain.
``metrics.json`` is written once at the end, on success, failure, timeout and
cancellation alike, its usage added up over the attempts, with five more keys:
``requested_adapter`` / ``requested_model`` (the run's own), ``adapter`` / ``model`` (the
candidate of the last attempt: the one that answered when the run succeeded), and
``candidates``, the candidate of each attempt in order.

Each candidate runs with its own adapter's environment (``HarnessRun.env_for``): the
variables named explicitly over the standard variables of that adapter's provider taken
from the caller's environment (none with ``--isolated-env``).

An agent CLI's attempt that changed the workspace (outside ``output_dir``) is marked
``details.workspace_changed`` and never moves (``backstay.fallback.workspace``); an API
stream cut after output never moves either (``details.stream_interrupted``). An agent's
own partial output is kept for the run's result, not read as streamed output.

With a spending budget (``--budget-usd``, ``--budget-tokens``) each attempt's estimate is
that of its candidate's adapter, model and price; one that does not fit is not started,
the chain does not move, and the run ends with ``ERR_BUDGET_EXCEEDED`` and exit code 5
(``backstay.adapters.harness.run_budget``).

The chain's breakers and cooldowns live in a ``MemoryFallbackStore`` unless a store is
given: one run is one process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from backstay.adapters.capture import Capture
from backstay.adapters.contract import Adapter, AgentRequest, AgentResult
from backstay.adapters.gateway_wiring import gateway_fallback, use_fallback_model
from backstay.adapters.harness.attempt_capture import captured_attempt
from backstay.adapters.harness.config import check_settings
from backstay.adapters.harness.run import run_captured
from backstay.adapters.harness.run_budget import RunBudget
from backstay.adapters.registry import get_adapter
from backstay.clock import Clock
from backstay.errors import AdapterError, ConfigError
from backstay.fallback.candidate import Candidate, adapter_config
from backstay.fallback.chain import FallbackChain
from backstay.fallback.rules import FallbackRules, mark_workspace_changed
from backstay.fallback.store import FallbackStore
from backstay.fallback.workspace import WorkspaceMark
from backstay.idempotency.ids import operation_id as make_operation_id
from backstay.policy.builtin import NO_RETRY

if TYPE_CHECKING:
    from backstay.config import HarnessRun

__all__ = ["HarnessChain", "run_harness_chain"]


@dataclasses.dataclass(frozen=True, slots=True)
class _Entry:
    candidate: Candidate
    adapter: Adapter
    request: AgentRequest


class HarnessChain:
    """A harness run's chain: each candidate with its adapter and request, checked up
    front (a ``ConfigError`` before anything runs or is written)."""

    def __init__(
        self,
        run: HarnessRun,
        *,
        adapters: Mapping[str, Adapter] | None = None,
        rules: FallbackRules | None = None,
        store: FallbackStore | None = None,
        clock: Clock | None = None,
    ) -> None:
        """``adapters`` by name (default: ``get_adapter``)."""
        given = dict(adapters or {})
        primary = Candidate(adapter=run.adapter, model=run.model, context_window=run.context_window)
        self.output_dir = run.output_dir
        self.entries: list[_Entry] = []
        for i, candidate in enumerate((primary, *run.fallbacks)):
            name = str(candidate.adapter)
            if name not in given:  # one adapter per name, shared by its candidates
                given[name] = get_adapter(name)
            adapter = given[name]
            config = adapter_config(candidate, adapter=run.adapter, config=run.options.config)
            where = "--adapter-option" if i == 0 else f"--fallback {candidate.name}"
            try:
                check_settings(config, adapter=adapter)
            except ConfigError as err:
                raise ConfigError(err.reason, where=f"{where}: {err.where}") from None
            request = AgentRequest(
                model=candidate.model,
                prompt_file=run.prompt_file,
                workspace=run.workspace,
                output_dir=run.output_dir,
                timeout_s=run.timeout_s,
                env=run.env_for(name),
                tier=run.tier,
                config=config,
                stall_timeout_s=run.stall_timeout_s,
            )
            self.entries.append(_Entry(candidate, adapter, request))
        # Without a policy (--no-retry, --policy none): one attempt across the chain.
        policy = NO_RETRY if run.policy is None else run.policy
        self.apart = run.policy is not None  # each attempt in attempt_N/ as well
        self.chain = FallbackChain(
            [e.candidate for e in self.entries],
            rules=rules,
            policy=policy,
            store=store,
            clock=clock,
            name="run",
        )
        self._by_name = {e.candidate.name: e for e in self.entries}
        # Each attempt's estimate is that candidate's (docs/budgets.md).
        self.budget = RunBudget(run.budget)
        self.tried: list[Candidate] = []
        self._partial: str | None = None

    def _index(self, candidate: Candidate) -> int:
        return next(i for i, e in enumerate(self.entries) if e.candidate.name == candidate.name)

    async def _attempt(
        self, candidate: Candidate, run: Capture, *, operation: str, number: int
    ) -> AgentResult:
        entry = self._by_name[candidate.name]
        self.tried.append(candidate)
        edits = getattr(entry.adapter, "agent", None) is not None
        workspace = entry.request.workspace
        before = WorkspaceMark.take(workspace, exclude=[self.output_dir]) if edits else None

        # Through a gateway, its requests move to the next candidate's model of the same
        # provider while their own model's circuit is open (the CLI goes on).
        fallback = gateway_fallback([e.candidate for e in self.entries], self._index(candidate))

        async def dispatch(capture: Capture) -> AgentResult:
            with use_fallback_model(fallback):
                return await entry.adapter.dispatch(
                    entry.request,
                    operation_id=operation,
                    attempt_id=f"{operation}:attempt_{number}",
                    capture=capture,
                )

        try:
            return await captured_attempt(run, number, dispatch, apart=self.apart)
        except AdapterError as err:
            failure = err.failure
            if before is not None and WorkspaceMark.take(
                workspace, exclude=[self.output_dir]
            ).changed_since(before):
                failure = mark_workspace_changed(failure)
            self._partial = err.partial_output
            # An agent's partial output is its log, not streamed text: the chain reads
            # only the failure (``stream_interrupted``, ``workspace_changed``).
            raise AdapterError(failure) from err

    async def arun(self, *, operation_id: str | None = None) -> AgentResult:
        """The run: the whole ``AgentResult`` (usage added over attempts)."""
        # The adapter reliability contract's ids: workflow:task:run, then :attempt_N.
        operation = operation_id or make_operation_id("run", "fallback", uuid.uuid4().hex)
        numbers = itertools.count(1)

        async def body(run: Capture) -> AgentResult:
            async def attempt(candidate: Candidate) -> AgentResult:
                number = next(numbers)
                entry = self._by_name[candidate.name]
                return await self.budget.attempt(
                    run,
                    entry.adapter,
                    entry.request,
                    number,
                    lambda: self._attempt(candidate, run, operation=operation, number=number),
                )

            return (await self.chain.acall(attempt)).value

        return await run_captured(
            self.output_dir,
            self.budget.bounded(body),
            partial=lambda: self._partial,
            extra=self.model_keys,
            answered_by=lambda: self.tried[-1].name if self.tried else "no candidate",
        )

    def model_keys(self) -> dict[str, Any]:
        """What ``metrics.json`` adds: requested, last (answering) and tried candidates."""
        requested = self.entries[0].candidate
        last = self.tried[-1] if self.tried else requested
        return {
            "requested_adapter": requested.adapter,
            "requested_model": requested.model,
            "adapter": last.adapter,
            "model": last.model,
            "candidates": [c.name for c in self.tried],
        }


def run_harness_chain(run: HarnessRun, *, adapters: Sequence[Adapter] = ()) -> int:
    """``backstay run`` with ``--fallback``: the run's exit code (0 on success, 124 on
    timeout, else the last agent's own code or 1); ``ConfigError`` before anything runs."""
    chain = HarnessChain(run, adapters={a.name: a for a in adapters})
    return asyncio.run(chain.arun()).exit_status
