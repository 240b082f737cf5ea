"""``run_harness_chain``: one harness run (``backstay run``) over a fallback chain.

The run's own adapter and model are the first candidate, its ``--fallback`` s the next.
Each attempt runs on the candidate ``FallbackChain`` picks (the same rules, breakers and
cooldowns as everywhere: ``backstay.fallback``), through that candidate's adapter
(``dispatch``), logging into the one ``output_dir``; ``metrics.json`` is written once at
the end, on success, failure, timeout and cancellation alike, with four more keys:
``requested_adapter`` / ``requested_model`` (the run's own) and ``adapter`` / ``model``
(the candidate of the last attempt: the one that answered when the run succeeded), and
``candidates``, the candidate of each attempt in order.

An agent CLI's attempt that changed the workspace (outside ``output_dir``) is marked
``details.workspace_changed`` and never moves (``backstay.fallback.workspace``); an API
stream cut after output never moves either (``details.stream_interrupted``). An agent's
own partial output is kept for the run's result, not read as streamed output.

The chain's breakers and cooldowns live in a ``MemoryFallbackStore`` unless a store is
given: one run is one process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import itertools
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from backstay.adapters.base import CANCELLED_EXIT_CODE
from backstay.adapters.capture import Capture
from backstay.adapters.contract import Adapter, AgentRequest, AgentResult
from backstay.adapters.registry import get_adapter
from backstay.classify import classify
from backstay.clock import Clock
from backstay.errors import AdapterError, ConfigError
from backstay.failure import Failure
from backstay.fallback.candidate import Candidate, adapter_config
from backstay.fallback.chain import FallbackChain
from backstay.fallback.rules import FallbackRules, mark_workspace_changed
from backstay.fallback.store import FallbackStore
from backstay.fallback.workspace import WorkspaceMark

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
                adapter.validate_config(config)
            except ConfigError as err:
                raise ConfigError(err.reason, where=f"{where}: {err.where}") from None
            request = AgentRequest(
                model=candidate.model,
                prompt_file=run.prompt_file,
                workspace=run.workspace,
                output_dir=run.output_dir,
                timeout_s=run.timeout_s,
                env=run.env,
                tier=run.tier,
                config=config,
                stall_timeout_s=run.stall_timeout_s,
            )
            self.entries.append(_Entry(candidate, adapter, request))
        self.chain = FallbackChain(
            [e.candidate for e in self.entries],
            rules=rules,
            policy=run.policy,
            store=store,
            clock=clock,
            name="run",
        )
        self._by_name = {e.candidate.name: e for e in self.entries}
        self.tried: list[Candidate] = []
        self._partial: str | None = None

    async def _attempt(
        self, candidate: Candidate, *, operation: str, number: int, capture: Capture
    ) -> AgentResult:
        entry = self._by_name[candidate.name]
        self.tried.append(candidate)
        edits = getattr(entry.adapter, "agent", None) is not None
        workspace = entry.request.workspace
        before = WorkspaceMark.take(workspace, exclude=[self.output_dir]) if edits else None
        try:
            return await entry.adapter.dispatch(
                entry.request,
                operation_id=operation,
                attempt_id=f"{operation}/{number}",
                capture=capture,
            )
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
        operation = operation_id or uuid.uuid4().hex
        numbers = itertools.count(1)
        with Capture(self.output_dir) as capture:
            started_at, started = _dt.datetime.now(_dt.UTC), time.monotonic()

            async def attempt(candidate: Candidate) -> AgentResult:
                return await self._attempt(
                    candidate, operation=operation, number=next(numbers), capture=capture
                )

            try:
                result = (await self.chain.acall(attempt)).value
            except AdapterError as err:
                result = self._failed(err.failure, capture)
            except asyncio.CancelledError:
                cancelled = Failure(code="ERR_CANCELLED", message="the run was cancelled")
                self._finish(capture, self._failed(cancelled, capture), started_at, started)
                raise
            except Exception as exc:  # noqa: BLE001 - the chain refused to call (Rejected): still a record
                result = self._failed(classify(exc), capture)
            return self._finish(capture, result, started_at, started)

    def _failed(self, failure: Failure, capture: Capture) -> AgentResult:
        return AgentResult.failed(
            failure, output=self._partial or "", usage=capture.usage, exit_code=capture.exit_code
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

    def _finish(
        self, capture: Capture, result: AgentResult, started_at: _dt.datetime, started: float
    ) -> AgentResult:
        duration = time.monotonic() - started
        result = dataclasses.replace(result, usage=capture.usage, duration_s=duration)
        cancelled = result.failure is not None and result.failure.code == "ERR_CANCELLED"
        exit_code = CANCELLED_EXIT_CODE if cancelled else result.exit_status
        capture.write_metrics(
            usage=result.usage,
            duration_s=duration,
            exit_code=exit_code,
            failure=result.failure,
            started_at=started_at,
            ended_at=_dt.datetime.now(_dt.UTC),
            extra=self.model_keys(),
        )
        last = self.tried[-1].name if self.tried else "no candidate"
        capture.log(
            f"run {result.status} on {last} with exit code {exit_code} after {duration:.3f} s"
        )
        return result


def run_harness_chain(run: HarnessRun, *, adapters: Sequence[Adapter] = ()) -> int:
    """``backstay run`` with ``--fallback``: the run's exit code (0 on success, 124 on
    timeout, else the last agent's own code or 1); ``ConfigError`` before anything runs."""
    chain = HarnessChain(run, adapters={a.name: a for a in adapters})
    return asyncio.run(chain.arun()).exit_status
