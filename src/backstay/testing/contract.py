"""``AdapterContract``: the checks every adapter passes, as a pytest suite to subclass.

::

    from backstay.testing.contract import AdapterContract

    class TestMyAdapter(AdapterContract):
        def make_adapter(self, scenario):
            return MyAdapter(...)            # set up so that it acts out ``scenario``

A scenario names one standard situation the adapter's agent or API is put in (by a fake
provider, a scripted CLI, a scripted transport: whatever the author's tests use):

==========================  =============================================================
``success``                 every attempt succeeds
``network_error``           attempts 1 and 2 of an operation fail with a network error
                            (connection refused or reset); later attempts succeed
``rate_limit_with_wait``    attempt 1 fails with a rate limit carrying a Retry-After of
                            ``retry_after_s`` (7 s); later attempts succeed
``context_overflow``        every attempt fails: the prompt exceeds the context window
``content_policy``          every attempt is refused by a content policy
``quota_exhausted``         every attempt fails: the quota (or plan limit) is spent
``hang``                    every attempt hangs: nothing ends it but the deadline
==========================  =============================================================

Checks that are about task states run the adapter through the real ``Engine`` (SQLite
state in the ``backstay_state_dir`` fixture, sleeping on the ``backstay_clock``
``FakeClock``, so retries take no time and their waits are recorded) under
``CONTRACT_POLICY``; the others dispatch directly. Fixtures come from the pytest plugin
``backstay.testing.plugin``, registered when backstay is installed. The hooks besides
``make_adapter``: ``adapter_config`` and ``adapter_env`` (the request's ``config`` and
``env`` for a scenario), ``runs_subprocess`` (``False`` skips the process checks),
``model``, ``timeout_s``, ``hang_timeout_s`` and ``retry_after_s``. See
``docs/adapter-contract.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Final, Literal, get_args

import pytest

from backstay.adapters.base import BaseAdapter
from backstay.adapters.contract import TIMEOUT_EXIT_CODE, Adapter, AgentResult, AgentStatus
from backstay.engine.states import TaskState
from backstay.engine.task import check_identifier
from backstay.errors import AdapterError
from backstay.failure import Failure
from backstay.idempotency.ids import attempt_id
from backstay.policy.retry import RETRY_AFTER_MARGIN_S, RetryPolicy
from backstay.taxonomy import CODES, FailureKind
from backstay.testing._contract_run import (
    PROMPT,
    EngineRun,
    check_attempt_files,
    check_metrics,
    dispatch_once,
    run_task,
)
from backstay.testing._processes import ProcessWatch, proc_available
from backstay.testing.fakeclock import FakeClock

__all__ = [
    "CONTRACT_POLICY",
    "FAILING_SCENARIOS",
    "RETRY_AFTER_S",
    "SCENARIOS",
    "AdapterContract",
    "ContractScenario",
]

ContractScenario = Literal[
    "success",
    "network_error",
    "rate_limit_with_wait",
    "context_overflow",
    "content_policy",
    "quota_exhausted",
    "hang",
]
SCENARIOS: Final[tuple[ContractScenario, ...]] = get_args(ContractScenario)

# The Retry-After the rate_limit_with_wait scenario carries: unlike any backoff delay below.
RETRY_AFTER_S: Final = 7.0
# Backoff 1 s, 2 s, 4 s; no jitter, so every wait is exact.
CONTRACT_POLICY: Final = RetryPolicy(
    name="contract",
    max_attempts=4,
    initial_delay_s=1.0,
    multiplier=2.0,
    max_delay_s=30.0,
    jitter=0.0,
    max_retry_after_s=60.0,
)
_ONCE: Final = CONTRACT_POLICY.derive(name="contract-once", max_attempts=1)

# The scenarios whose first attempt fails, and the kind its Failure must have.
FAILING_SCENARIOS: Final[Mapping[ContractScenario, FailureKind]] = {
    "network_error": FailureKind.NETWORK,
    "rate_limit_with_wait": FailureKind.RATE_LIMIT,
    "context_overflow": FailureKind.CONTEXT_LIMIT,
    "content_policy": FailureKind.CONTENT_POLICY,
    "quota_exhausted": FailureKind.QUOTA_EXHAUSTED,
    "hang": FailureKind.TIMEOUT,
}


def _kinds(failures: list[Failure | None]) -> list[FailureKind | None]:
    return [None if f is None else f.kind for f in failures]


class AdapterContract:
    """Subclass as ``Test<Something>`` and define ``make_adapter``; see the module."""

    runs_subprocess: ClassVar[bool] = True
    model: ClassVar[str] = "contract-model"
    timeout_s: ClassVar[float] = 60.0
    hang_timeout_s: ClassVar[float] = 1.0
    retry_after_s: ClassVar[float] = RETRY_AFTER_S

    # -- hooks --------------------------------------------------------------------------

    def make_adapter(self, scenario: ContractScenario) -> Adapter:
        """A new adapter that acts out ``scenario`` (one per check)."""
        raise NotImplementedError(f"{type(self).__name__} must define make_adapter(scenario)")

    def adapter_config(self, scenario: ContractScenario) -> Mapping[str, Any]:
        """The request's ``config`` for ``scenario`` (the adapter's own settings)."""
        return {}

    def adapter_env(self, scenario: ContractScenario) -> Mapping[str, str]:
        """The request's ``env`` for ``scenario`` (the agent's whole environment)."""
        return {}

    # -- running ------------------------------------------------------------------------

    def _adapter(self, scenario: ContractScenario) -> Adapter:
        adapter = self.make_adapter(scenario)
        assert isinstance(adapter, Adapter), (
            f"{type(adapter).__name__} does not implement the Adapter protocol "
            "(name, dispatch, validate_config, classify_failure)"
        )
        return adapter

    def _run(
        self,
        scenario: ContractScenario,
        clock: FakeClock,
        state_dir: Path,
        *,
        policy: RetryPolicy = CONTRACT_POLICY,
        timeout_s: float | None = None,
    ) -> EngineRun:
        return run_task(
            self._adapter(scenario),
            task_id=scenario,
            state_dir=state_dir,
            workspace=state_dir.parent / "workspace",
            clock=clock,
            policy=policy,
            model=self.model,
            timeout_s=self.timeout_s if timeout_s is None else timeout_s,
            config=self.adapter_config(scenario),
            env=self.adapter_env(scenario),
        )

    def _dispatch(
        self,
        scenario: ContractScenario,
        tmp_path: Path,
        *,
        adapter: Adapter | None = None,
        env: Mapping[str, str] | None = None,
    ) -> AgentResult | AdapterError:
        timeout = self.hang_timeout_s if scenario == "hang" else self.timeout_s
        try:
            return dispatch_once(
                adapter or self._adapter(scenario),
                task_id=scenario,
                output_dir=tmp_path / "direct" / scenario,
                workspace=tmp_path / "workspace",
                model=self.model,
                timeout_s=timeout,
                config=self.adapter_config(scenario),
                env={**self.adapter_env(scenario), **(env or {})},
            )
        except Exception as exc:  # noqa: BLE001 - reporting any such exception is the check
            pytest.fail(
                f"dispatch raised {type(exc).__name__}: {exc}; an adapter may raise only "
                "AdapterError (with a classified Failure)"
            )

    def _failure_of(self, scenario: ContractScenario, tmp_path: Path) -> Failure:
        outcome = self._dispatch(scenario, tmp_path)
        assert isinstance(outcome, AdapterError), (
            f"scenario {scenario!r}: dispatch returned {outcome!r} instead of raising AdapterError"
        )
        assert isinstance(outcome.failure, Failure), (
            f"AdapterError.failure is {type(outcome.failure).__name__}, not a Failure"
        )
        return outcome.failure

    def _harness(self, scenario: ContractScenario, tmp_path: Path) -> tuple[int, Path]:
        adapter = self._adapter(scenario)
        if not isinstance(adapter, BaseAdapter):
            pytest.skip(f"{type(adapter).__name__} is not a BaseAdapter: no harness run()")
        prompt = tmp_path / "prompt.txt"
        prompt.write_text(PROMPT, encoding="utf-8")
        workspace = tmp_path / "workspace"
        workspace.mkdir(exist_ok=True)
        output = tmp_path / "harness" / scenario
        code = adapter.run(
            self.model,
            prompt,
            workspace,
            output,
            self.adapter_config(scenario),
            self.hang_timeout_s if scenario == "hang" else self.timeout_s,
            env=self.adapter_env(scenario),
            policy="no_retry",  # one attempt: each check is of what one attempt records
        )
        return code, output

    # -- the protocol -------------------------------------------------------------------

    def test_the_adapter_keeps_the_protocol(self) -> None:
        adapter = self._adapter("success")
        check_identifier(adapter.name, where="adapter.name")
        valid = adapter.validate_config(self.adapter_config("success"))
        assert valid is True, f"validate_config returned {valid!r} for valid settings, not True"

    def test_a_successful_attempt_returns_a_succeeded_result(self, tmp_path: Path) -> None:
        outcome = self._dispatch("success", tmp_path)
        assert isinstance(outcome, AgentResult), f"success raised {outcome!r}"
        assert (outcome.status, outcome.failure) == (AgentStatus.SUCCEEDED, None)

    @pytest.mark.parametrize("scenario", list(FAILING_SCENARIOS))
    def test_every_failure_is_an_adapter_error_with_a_classified_failure(
        self, scenario: ContractScenario, tmp_path: Path
    ) -> None:
        failure = self._failure_of(scenario, tmp_path)
        assert failure.kind is FAILING_SCENARIOS[scenario], (
            f"scenario {scenario!r} was classified {failure.kind}/{failure.code}: {failure.message}"
        )

    def test_a_rate_limit_failure_carries_its_retry_after(self, tmp_path: Path) -> None:
        failure = self._failure_of("rate_limit_with_wait", tmp_path)
        assert failure.retry_after_s == pytest.approx(self.retry_after_s), failure

    # -- what the engine makes of each failure ------------------------------------------

    def test_a_successful_task_takes_one_attempt(
        self, backstay_clock: FakeClock, backstay_state_dir: Path
    ) -> None:
        run = self._run("success", backstay_clock, backstay_state_dir)
        assert run.record.state is TaskState.SUCCEEDED, run.record.reason
        assert (len(run.attempts), run.sleeps) == (1, ())

    def test_a_network_failure_is_retried_with_backoff(
        self, backstay_clock: FakeClock, backstay_state_dir: Path
    ) -> None:
        run = self._run("network_error", backstay_clock, backstay_state_dir)
        assert run.record.state is TaskState.SUCCEEDED, run.record.reason
        assert _kinds(run.failures) == [FailureKind.NETWORK, FailureKind.NETWORK, None]
        assert run.delays == [1.0, 2.0, None]
        assert run.sleeps == (1.0, 2.0)

    def test_a_rate_limit_waits_its_retry_after(
        self, backstay_clock: FakeClock, backstay_state_dir: Path
    ) -> None:
        run = self._run("rate_limit_with_wait", backstay_clock, backstay_state_dir)
        assert run.record.state is TaskState.SUCCEEDED, run.record.reason
        assert _kinds(run.failures) == [FailureKind.RATE_LIMIT, None]
        # The provider's wait, plus the policy's small margin against clock skew.
        assert run.sleeps == pytest.approx((self.retry_after_s + RETRY_AFTER_MARGIN_S,))

    def test_a_context_overflow_fails_the_task_without_a_retry(
        self, backstay_clock: FakeClock, backstay_state_dir: Path
    ) -> None:
        run = self._run("context_overflow", backstay_clock, backstay_state_dir)
        assert (run.record.state, run.record.reason) == (
            TaskState.FAILED,
            "context_limit exceeded",
        )
        assert (_kinds(run.failures), run.sleeps) == ([FailureKind.CONTEXT_LIMIT], ())

    def test_a_content_policy_refusal_is_escalated(
        self, backstay_clock: FakeClock, backstay_state_dir: Path
    ) -> None:
        # The adapter reliability contract: not retried, FAILED + escalation for review.
        run = self._run("content_policy", backstay_clock, backstay_state_dir)
        assert run.record.state is TaskState.FAILED, run.record.reason
        assert _kinds(run.failures) == [FailureKind.CONTENT_POLICY]
        assert [e.operation_id for e in run.escalations] == [run.spec.operation_id]
        assert run.escalations[0].failure.kind is FailureKind.CONTENT_POLICY

    def test_an_exhausted_quota_pauses_the_task(
        self, backstay_clock: FakeClock, backstay_state_dir: Path
    ) -> None:
        run = self._run("quota_exhausted", backstay_clock, backstay_state_dir)
        assert run.record.state is TaskState.PAUSED, run.record.reason
        (failure,) = run.failures
        assert failure is not None
        assert failure.kind is FailureKind.QUOTA_EXHAUSTED
        assert run.record.next_run_at == failure.resets_at
        assert [e.operation_id for e in run.escalations] == [run.spec.operation_id]
        assert run.sleeps == ()

    def test_the_operation_id_is_stable_and_the_attempt_id_changes(
        self, backstay_clock: FakeClock, backstay_state_dir: Path
    ) -> None:
        run = self._run("network_error", backstay_clock, backstay_state_dir)
        op = run.spec.operation_id
        assert run.ids == tuple((op, attempt_id(op, n)) for n in (1, 2, 3))
        assert [a.attempt_id for a in run.attempts] == [a for _, a in run.ids]

    # -- what every attempt leaves ------------------------------------------------------

    def test_every_attempt_leaves_its_logs_and_metrics(
        self, backstay_clock: FakeClock, backstay_state_dir: Path
    ) -> None:
        run = self._run("network_error", backstay_clock, backstay_state_dir)
        for attempt in run.attempts:
            metrics = check_attempt_files(Path(attempt.output_dir))
            if attempt.failure is None:
                assert (metrics["exit_code"], metrics["error"]) == (0, None)
            else:
                assert metrics["exit_code"] != 0
                assert str(metrics["error"]).startswith(f"{attempt.failure.code}: ")

    def test_a_hung_attempt_times_out_with_exit_code_124(
        self, backstay_clock: FakeClock, backstay_state_dir: Path
    ) -> None:
        run = self._run(
            "hang", backstay_clock, backstay_state_dir, policy=_ONCE, timeout_s=self.hang_timeout_s
        )
        assert run.record.state is TaskState.FAILED, run.record.reason
        assert _kinds(run.failures) == [FailureKind.TIMEOUT]
        metrics = check_attempt_files(Path(run.attempts[0].output_dir))
        assert metrics["exit_code"] == TIMEOUT_EXIT_CODE

    def test_a_timed_out_attempt_leaves_no_process_behind(self, tmp_path: Path) -> None:
        if not self.runs_subprocess:
            pytest.skip(f"{type(self).__name__} declares that its adapter runs no subprocess")
        if not proc_available():
            pytest.skip("needs /proc to see processes")
        adapter = self._adapter("hang")
        with ProcessWatch() as watch:
            outcome = self._dispatch("hang", tmp_path, adapter=adapter, env=watch.env)
        assert isinstance(outcome, AdapterError), f"hang returned {outcome!r}"
        assert outcome.failure.kind is FailureKind.TIMEOUT, outcome.failure
        assert watch.seen, "no subprocess was seen; set runs_subprocess = False if none runs"
        left = watch.leftovers()
        assert left == [], f"processes left behind: {left}"

    # -- the harness entry point (BaseAdapter.run) ---------------------------------------

    def test_the_harness_run_exits_0_on_success_with_its_metrics(self, tmp_path: Path) -> None:
        code, output = self._harness("success", tmp_path)
        assert code == 0
        metrics = check_attempt_files(output)
        assert (metrics["exit_code"], metrics["error"]) == (0, None)

    def test_the_harness_run_exits_124_on_a_timeout(self, tmp_path: Path) -> None:
        code, output = self._harness("hang", tmp_path)
        assert code == TIMEOUT_EXIT_CODE
        metrics = check_metrics(output / "metrics.json")
        assert metrics["exit_code"] == TIMEOUT_EXIT_CODE
        code_name = str(metrics["error"]).partition(":")[0]
        assert CODES[code_name].kind is FailureKind.TIMEOUT, metrics["error"]
