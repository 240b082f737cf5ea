"""``BaseAdapter``: the contract's plumbing, so that an adapter writes only ``execute``.

``dispatch`` wraps ``execute`` and keeps the contract whatever ``execute`` does: foreign
exceptions are classified and raised as ``AdapterError`` (translated at this one
boundary), a failed or timed-out ``AgentResult`` becomes an ``AdapterError`` with its
partial output, usage and exit codes are recorded in the ``Capture`` (an attempt the
provider refused with an HTTP status counts the API call it made, even when the agent
reports none), and secrets in the request's environment are registered for redaction
before anything runs.

``run`` / ``arun`` are the evaluation-harness entry point: one run of the agent, its logs
and ``metrics.json`` in ``output_dir`` (on success, failure, timeout and cancellation
alike), and the exit code (124 on timeout). Transient failures are retried as the
adapter reliability contract says: without a ``policy``, under the registry's policy for
``agent`` operations (``agent_dispatch``: 3 retries, 2 s, 4 s, 8 s, ``Retry-After``
honoured); ``policy="no_retry"`` (or ``"none"``) makes one attempt. ``backstay.acall``
decides, from each attempt's ``Failure``; the run's files hold every attempt
(``metrics.json`` adds up their usage) and, when the policy allows more than one, each
attempt also has its own files in ``output_dir/attempt_N/``.
The run's environment is ``env`` over the provider variables the adapter declares
(``provider_env``), taken from this process's environment unless ``inherit_env=False``
(``backstay.adapters.provider_env``).
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import itertools
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

from backstay._secret_values import SECRET_ENV_NAME
from backstay.adapters.capture import Capture
from backstay.adapters.cli.process import ProcessOutcome
from backstay.adapters.contract import AgentRequest, AgentResult, TierConfig
from backstay.adapters.gateway_wiring import GatewayWiring, aopen_run
from backstay.adapters.harness.attempt_capture import captured_attempt
from backstay.adapters.harness.config import check_settings, split_harness_config
from backstay.adapters.harness.run import CANCELLED_EXIT_CODE, run_captured
from backstay.adapters.harness.run_budget import RunBudget
from backstay.adapters.provider_env import NO_PROVIDER_ENV, ProviderEnv, agent_env
from backstay.adapters.usage import Usage
from backstay.call import acall
from backstay.classify import check_output, classify
from backstay.errors import AdapterError, ConfigError
from backstay.failure import Failure
from backstay.idempotency.ids import operation_id as make_operation_id
from backstay.policy.registry import OperationType, resolve_policy
from backstay.policy.retry import RetryPolicy
from backstay.policy.spend import SpendBudget
from backstay.redact import register_secret

if TYPE_CHECKING:
    from backstay.adapters.cli.attempt_start import StartKeeper

__all__ = ["CANCELLED_EXIT_CODE", "BaseAdapter"]

# The policy name of a single attempt, as ``backstay run --policy none`` says it.
SINGLE_ATTEMPT: Final = "none"
# The codes of failures a provider answered with an HTTP status.
HTTP_FAILURE_PREFIX: Final = "ERR_HTTP_"
# Environment variables whose values are secrets: the rule ``backstay.redact`` applies to
# the parent's own environment, applied to the environment a child is given.


def _register_env_secrets(env: Mapping[str, str]) -> None:
    for name, value in env.items():
        if SECRET_ENV_NAME.search(name):
            register_secret(value)


def _retry_policy(policy: RetryPolicy | str | None) -> RetryPolicy | None:
    """The policy a harness run's attempts go through; ``None`` for a single attempt
    made directly (``"none"``)."""
    if isinstance(policy, str) and policy.strip() == SINGLE_ATTEMPT:
        return None
    return resolve_policy(policy, OperationType.AGENT)


def _answered_call_counted(result: AgentResult) -> Usage:
    """``result``'s usage, with the API call its failure shows counted: an agent CLI refused
    by its provider (a 429, an overflowing prompt) often reports no usage at all, yet the
    provider answered one request."""
    failure = result.failure
    answered = failure is not None and (
        failure.status is not None or failure.code.startswith(HTTP_FAILURE_PREFIX)
    )
    if answered and result.usage.api_calls == 0:
        return dataclasses.replace(result.usage, api_calls=1)
    return result.usage


class BaseAdapter(abc.ABC):  # noqa: B024 - a subclass with only run() must instantiate
    """An adapter built on the shared plumbing. Subclasses set ``name`` (the registry
    name), ``agent`` (the agent name ``backstay.classify_output`` knows, for CLIs),
    ``config_keys`` (the settings ``validate_config`` accepts) and ``provider_env`` (the
    standard variables of its provider a run inherits), and write ``execute``."""

    name: ClassVar[str] = ""
    agent: ClassVar[str | None] = None
    config_keys: ClassVar[frozenset[str]] = frozenset()
    # Portable task limits this adapter enforces → its config key (``adapters.limits``).
    task_limits: ClassVar[Mapping[str, str]] = {}
    provider_env: ClassVar[ProviderEnv] = NO_PROVIDER_ENV
    # How its agent CLI is pointed at a gateway (``backstay.adapters.gateway_wiring``).
    gateway_wiring: ClassVar[GatewayWiring | None] = None
    # Whether running an attempt twice is harmless. Agent runs edit files and API calls
    # bill, so adapters are non-idempotent unless they say otherwise: the engine runs them
    # through ``IdempotencyGuard.run_non_idempotent`` (refused without an operation id).
    idempotent: ClassVar[bool] = False

    def get_name(self) -> str:
        """The adapter's registered name (the evaluation harness interface's ``get_name``);
        the class name for a subclass that registers none."""
        return self.name or type(self).__name__

    def start_keeper(self, request: AgentRequest, *, operation: str) -> StartKeeper | None:
        """What keeps a harness run's workspace snapshot and agent session across its
        attempts (``backstay.adapters.cli.attempt_start``); ``None``: nothing to keep
        (every adapter but an agent CLI's)."""
        return None

    def validate_config(self, config: Mapping[str, Any]) -> bool:
        """``True`` for a mapping whose keys are all in ``config_keys`` or are the
        evaluation harness interface's merged-config keys (tier keys, ``test_id``,
        ``task_description``, ``api_keys``: their values checked as ``run()`` checks
        them), else ``ConfigError`` (a ``ValueError``) naming the key and never showing an
        ``api_keys`` value, as that interface has it. Subclasses extend this to check the
        values of their settings and return ``True`` too. A task of the engine, a suite
        or ``backstay run`` gives settings only (``refuse_harness_keys``)."""
        settings = split_harness_config(config, adapter_keys=self.config_keys, tier=None).settings
        unknown = sorted(str(key) for key in settings if key not in self.config_keys)
        if unknown:
            known = ", ".join(sorted(self.config_keys)) or "none"
            raise ConfigError(
                f"unknown setting for adapter {self.name!r} (known: {known})",
                where=f"config.{unknown[0]}",
            )
        return True

    def classify_failure(
        self,
        *,
        output: str = "",
        exit_code: int | None = None,
        error: BaseException | None = None,
    ) -> Failure | None:
        """``error`` classified (a ``ConfigError`` is an invalid request), else what the
        output and exit code show, read as ``agent`` prints it; ``None`` for success."""
        if isinstance(error, ConfigError):
            return Failure(
                code="ERR_REQUEST_INVALID",
                message=str(error),
                details={"source": "config", "where": error.where},
            )
        if error is not None:
            return classify(error)
        return check_output(output, agent=self.agent or self.name, exit_code=exit_code)

    def process_failure(
        self, outcome: ProcessOutcome, request: AgentRequest, *, evidence: str
    ) -> Failure | None:
        """The failure of an attempt that ran a process: a kill at the deadline or stall
        limit first, else what ``evidence`` (its output) and the exit code show."""
        details = {"agent": self.agent or self.name, "exit_code": outcome.exit_code}
        if outcome.timed_out:
            return Failure(
                code="ERR_TIMEOUT",
                message=f"{self.name} ran past its {request.timeout_s:g} s deadline; "
                "its process group was killed",
                details={"source": "deadline", **details},
            )
        if outcome.stalled:
            return Failure(
                code="ERR_STREAM_STALLED",
                message=f"{self.name} printed nothing for {request.stall_timeout_s:g} s; "
                "its process group was killed",
                details={"source": "stall", **details},
            )
        return self.classify_failure(output=evidence, exit_code=outcome.exit_code)

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        """Run one attempt and return its result, failed or not; may raise anything.

        Every adapter backstay drives overrides it. A subclass that overrides only ``run()``
        (the evaluation harness interface's way to add an adapter) is a harness's adapter:
        the harness calls its ``run()``; backstay's engine cannot dispatch it."""
        raise ConfigError(
            f"{type(self).__name__} implements run() only: a harness calls it; backstay's "
            "engine and backstay run need execute() (docs/adapter-contract.md)",
            where="adapter",
        )

    async def dispatch(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        """One attempt under the contract: a succeeded result, or ``AdapterError``."""
        _register_env_secrets(request.env)
        await capture.alog(
            f"{self.name}: attempt {attempt_id} of {operation_id}, model {request.model}"
        )
        run = await aopen_run(
            self.gateway_wiring, request, operation_id=operation_id, attempt_id=attempt_id
        )
        try:
            check_settings(request.config, adapter=self)
            if run is not None:
                await capture.alog(f"{self.name}: through the gateway at {run.gateway.url}")
            result = await self.execute(
                request if run is None else run.request,
                operation_id=operation_id,
                attempt_id=attempt_id,
                capture=capture,
            )
            if run is not None:  # the gateway's counts of what the provider answered
                await run.aclose()
                result = dataclasses.replace(result, usage=run.counted(result.usage))
        except AdapterError as err:
            await capture.alog(f"attempt {attempt_id} failed: {err.failure}")
            raise
        except asyncio.CancelledError:
            await capture.alog(f"attempt {attempt_id} cancelled")
            raise
        except Exception as exc:
            failure = self.classify_failure(error=exc) or classify(exc)
            await capture.alog(f"attempt {attempt_id} raised {type(exc).__name__}: {failure}")
            raise AdapterError(failure) from exc
        finally:
            if run is not None:
                await run.aclose()
        # The gateway's counts are what the provider answered: a request its open circuit
        # refused reached no provider, though the CLI reports an HTTP status.
        counted = run is not None and run.counts is not None
        capture.add_usage(result.usage if counted else _answered_call_counted(result))
        if result.exit_code is not None:
            capture.record_exit(result.exit_code)
        if result.failure is not None:
            await capture.alog(f"attempt {attempt_id} {result.status}: {result.failure}")
            raise AdapterError(result.failure, partial_output=result.output or None)
        await capture.alog(f"attempt {attempt_id} succeeded in {result.duration_s:.3f} s")
        return result

    async def arun(  # noqa: PLR0917 - harnesses call run() positionally
        self,
        model: str,
        prompt_file: Path | str | None,
        workspace: Path | str,
        output_dir: Path | str,
        config: Mapping[str, Any],
        timeout: float,
        *,
        env: Mapping[str, str] | None = None,
        tier: TierConfig | None = None,
        stall_timeout_s: float | None = None,
        policy: RetryPolicy | str | None = None,
        operation_id: str | None = None,
        inherit_env: bool = True,
        budget: SpendBudget | None = None,
    ) -> AgentResult:
        """One harness run: the whole ``AgentResult`` (usage added over attempts).

        ``policy`` is a ``RetryPolicy`` or a registered name; ``None`` is the registry's
        policy for ``agent`` operations (the contract's ``agent_dispatch``), and
        ``"no_retry"`` or ``"none"`` one attempt.

        ``config`` may be the evaluation harness interface's merged dictionary: its tier
        keys make the run's tier (instead of ``tier``), ``test_id`` is recorded in
        ``metrics.json``, ``task_description`` is the prompt when ``prompt_file`` is
        ``None``, and ``api_keys`` (variable → key) join the agent's environment, registered
        for redaction and never written (``backstay.adapters.harness.config``); the rest
        are the adapter's settings.

        The agent's environment is ``env`` over ``api_keys`` over the ``provider_env``
        variables set in this process's environment (no inherited ones with
        ``inherit_env=False``). Invalid arguments
        or ``config`` raise ``ConfigError`` before anything runs or is written; from then
        on every outcome is a result, and ``metrics.json`` is written. With ``budget``,
        an attempt whose estimate does not fit what is left of it is not started: the run
        ends with ``ERR_BUDGET_EXCEEDED`` and exit code 5 (docs/budgets.md).
        """
        harness = split_harness_config(config, adapter_keys=self.config_keys, tier=tier)
        for key in harness.api_keys.values():
            register_secret(key)
        if prompt_file is None and harness.task_description is None:
            raise ConfigError(
                "give a prompt file, or the task in config.task_description", where="prompt_file"
            )
        explicit = {**harness.api_keys, **(env or {})}
        request = AgentRequest(
            model=model,
            prompt=harness.task_description if prompt_file is None else None,
            prompt_file=None if prompt_file is None else Path(prompt_file),
            workspace=Path(workspace),
            output_dir=Path(output_dir),
            timeout_s=timeout,
            env=agent_env(self, explicit, environ=os.environ, inherit=inherit_env),
            tier=harness.tier,
            config=harness.settings,
            stall_timeout_s=stall_timeout_s,
        )
        self.validate_config(request.config)
        recorded = {} if harness.test_id is None else {"test_id": harness.test_id}
        gate = RunBudget(budget)
        chosen = _retry_policy(policy)
        several = chosen is not None and chosen.max_attempts > 1
        # The adapter reliability contract's ids: workflow:task:run, then :attempt_N.
        operation = operation_id or make_operation_id("run", self.name, uuid.uuid4().hex)
        # An agent CLI's workspace snapshot and kept session, when a retry may follow.
        keeper = self.start_keeper(request, operation=operation) if several else None
        failed: list[Failure] = []

        async def body(run: Capture) -> AgentResult:
            numbers = itertools.count(1)

            async def attempt() -> AgentResult:
                number = next(numbers)
                current = request
                if keeper is not None:
                    current, path = keeper.prepare(
                        self,
                        request,
                        number=number,
                        previous_failure=failed[-1] if failed else None,
                        previous_output=request.output_dir if number > 1 else None,
                    )
                    await run.alog(f"{self.name}: attempt {number} starts: {path}")

                async def dispatch(capture: Capture) -> AgentResult:
                    attempt_id = f"{operation}:attempt_{number}"
                    try:
                        return await self.dispatch(
                            current, operation_id=operation, attempt_id=attempt_id, capture=capture
                        )
                    except AdapterError as err:
                        failed.append(err.failure)
                        raise

                return await gate.attempt(
                    run,
                    self,
                    request,
                    number,
                    lambda: captured_attempt(run, number, dispatch, apart=several),
                )

            if chosen is None:
                return await attempt()
            result = await acall(attempt, policy=chosen, operation="agent")
            if keeper is not None:
                keeper.finished()
            return result

        return await run_captured(
            request.output_dir,
            gate.bounded(body),
            classify_error=lambda exc: self.classify_failure(error=exc) or classify(exc),
            extra=lambda: recorded,
        )

    def run(  # noqa: PLR0917 - harnesses call run() positionally
        self,
        model: str,
        prompt_file: Path | str | None,
        workspace: Path | str,
        output_dir: Path | str,
        config: Mapping[str, Any],
        timeout: float,
        *,
        env: Mapping[str, str] | None = None,
        tier: TierConfig | None = None,
        stall_timeout_s: float | None = None,
        policy: RetryPolicy | str | None = None,
        operation_id: str | None = None,
        inherit_env: bool = True,
        budget: SpendBudget | None = None,
    ) -> int:
        """``arun`` for a harness outside asyncio; returns the run's exit code: 0 on
        success, 124 on timeout, 5 when ``budget`` stopped it, else the agent's own
        non-zero code or 1."""
        result = asyncio.run(
            self.arun(
                model,
                prompt_file,
                workspace,
                output_dir,
                config,
                timeout,
                env=env,
                tier=tier,
                stall_timeout_s=stall_timeout_s,
                policy=policy,
                operation_id=operation_id,
                inherit_env=inherit_env,
                budget=budget,
            )
        )
        return result.exit_status
