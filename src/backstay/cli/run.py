"""``backstay run``: one agent run as an evaluation harness starts it, through the
adapter's harness entry point (``BaseAdapter.run``), exiting with the run's exit code."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from backstay.adapters.contract import TIMEOUT_EXIT_CODE
from backstay.cli import _options
from backstay.cli._batch_gc import collector_for_batch
from backstay.cli._errors import usage_error
from backstay.cli._gateway_runs import GatewayUrlOption, NoGatewayOption, agent_gateway
from backstay.cli._logging import apply_log_level, failures_on_stderr
from backstay.config.suite.spec import DEFAULT_TIMEOUT_S
from backstay.errors import ConfigError

# The configuration, the adapter's harness, the fallback chain and what the run shows are
# imported when the command runs, not for its --help (tests/cli/test_startup.py).
if TYPE_CHECKING:
    from backstay.config import HarnessRun
    from backstay.policy import PolicyRegistry
    from backstay.policy.ratelimit import RateLimitSettings

# The key ``metrics.json`` of a run numbered by ``RUN_NUMBER`` holds that number in.
RUN_NUMBER_KEY: Final = "run_number"
# ``backstay.adapters.capture.METRICS_FILE`` (tests/cli/test_startup.py holds them alike).
METRICS_FILE: Final = "metrics.json"
# The run's final failure, said by ``_report`` (its retries and fallback moves are said by
# ``_run_progress``: ``SHOWN``).
_FINAL_FAILURE: Final = "retry.gave_up"
_OUTCOMES = {0: "succeeded", TIMEOUT_EXIT_CODE: "timed out"}


def _error_of(output_dir: Path) -> str | None:
    """The (redacted) error metrics.json records, if it can be read."""
    try:
        metrics: Any = json.loads((output_dir / METRICS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    error = metrics.get("error") if isinstance(metrics, dict) else None
    return error if isinstance(error, str) and error else None


def _check_unused(output_dir: Path) -> None:
    """A ``ConfigError`` when ``output_dir`` holds files already (a previous run's logs
    and metrics.json): a run never appends to another's, nor half-replaces it."""
    try:
        found = sorted(entry.name for entry in output_dir.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError:
        return  # unreadable: the run's own first write says so
    if found:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise ConfigError(
            f"{output_dir} already holds files ({shown}): a run's logs and metrics.json "
            "go to a directory of their own. Nothing ran: give a new --output-dir, or "
            "empty this one",
            where="--output-dir",
        )


def _answered(spec: HarnessRun) -> str:
    """The candidate (``adapter/model``) the run's last attempt ran on, as metrics.json
    records it, and the one asked for when that was another (a fallback answered)."""
    asked = f"{spec.adapter}/{spec.model}" if spec.model else spec.adapter
    try:
        metrics: Any = json.loads((spec.output_dir / METRICS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return asked
    if not isinstance(metrics, dict) or not metrics.get("adapter"):
        return asked
    ran = f"{metrics['adapter']}/{metrics['model']}" if metrics.get("model") else asked
    return ran if ran == asked else f"{ran} (fallback of {asked})"


def _report(spec: HarnessRun, code: int) -> None:
    from backstay.adapters.harness.run import CANCELLED_EXIT_CODE  # noqa: PLC0415 - see imports
    from backstay.adapters.harness.run_budget import BUDGET_CODE, BUDGET_EXIT_CODE  # noqa: PLC0415

    outcome = "cancelled" if code == CANCELLED_EXIT_CODE else _OUTCOMES.get(code, "failed")
    error = None if code == 0 else _error_of(spec.output_dir)
    if code == BUDGET_EXIT_CODE and error is not None and error.startswith(BUDGET_CODE):
        outcome = "stopped at its spending budget"  # not an agent's own exit code 5
    detail = f": {error}" if error else ""
    # Plain text, as rich printed it (no markup, highlighting or wrapping), without rich.
    typer.echo(
        f"backstay run: {_answered(spec)} {outcome} (exit code {code}){detail}; "
        f"logs and {METRICS_FILE} in {spec.output_dir}",
        err=True,
    )


def _record_run_number(spec: HarnessRun) -> None:
    """Add the harness's ``RUN_NUMBER`` to ``metrics.json``, after the standard keys."""
    if spec.run_number is None:
        return
    path = spec.output_dir / METRICS_FILE
    try:
        metrics: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(metrics, dict):
        from backstay.adapters.capture import write_json_atomic  # noqa: PLC0415 - see imports

        write_json_atomic(path, {**metrics, RUN_NUMBER_KEY: spec.run_number})


def _start(
    spec: HarnessRun,
    *,
    gateway: bool = True,
    gateway_url: str | None = None,
    registry: PolicyRegistry | None = None,
    rate_limits: Mapping[str, RateLimitSettings] | None = None,
) -> int:
    from backstay.cli._run_progress import SHOWN, showing_run  # noqa: PLC0415 - see imports

    # Each attempt's failure on stderr; the final one is printed by ``_report``.
    adapters = [spec.adapter, *(c.adapter for c in spec.fallbacks if c.adapter)]
    candidate = f"{spec.adapter}/{spec.model}" if spec.model else spec.adapter
    with (
        failures_on_stderr(printed=SHOWN | {_FINAL_FAILURE}),
        showing_run(candidate),
        agent_gateway(
            adapters,
            enabled=gateway,
            url=gateway_url,
            registry=registry,
            rate_limits=rate_limits,
            parallel=1,  # one task: its run may be granted the whole room
        ),
    ):
        _say_budget_between_attempts(spec, gateway_url)
        return _start_run(spec)


def _say_budget_between_attempts(spec: HarnessRun, gateway_url: str | None) -> None:
    """Say so when the shared gateway at ``gateway_url`` cannot hold the run's budget per
    request (it says it holds no single run's: a gateway of an earlier version)."""
    budget = spec.budget
    if gateway_url is None or budget is None or budget.unlimited:
        return
    from backstay.adapters.gateway_wiring import current_gateway  # noqa: PLC0415 - see imports

    shared = current_gateway()
    if shared is None or getattr(shared, "holds_runs", True):
        return
    typer.echo(
        f"backstay run: the gateway at {gateway_url} does not hold a run's budget per "
        "request: this run's budget is checked between attempts only",
        err=True,
    )


def _start_run(spec: HarnessRun) -> int:
    from backstay.adapters.base import CANCELLED_EXIT_CODE, BaseAdapter  # noqa: PLC0415
    from backstay.adapters.registry import get_adapter  # noqa: PLC0415
    from backstay.config.run.harness import NO_RETRY_POLICY  # noqa: PLC0415

    if spec.fallbacks:  # each attempt on a candidate of the chain (docs/fallback.md)
        from backstay.fallback.harness import run_harness_chain  # noqa: PLC0415 - a chain only

        try:
            return run_harness_chain(spec)
        except KeyboardInterrupt:  # the run was cancelled; its metrics.json says so
            return CANCELLED_EXIT_CODE
    adapter = get_adapter(spec.adapter)
    if not isinstance(adapter, BaseAdapter):
        raise ConfigError(
            f"adapter {spec.adapter!r} has no harness entry point (it is not a BaseAdapter)",
            where="--adapter",
        )
    try:
        return adapter.run(
            spec.model,
            spec.prompt_file,
            spec.workspace,
            spec.output_dir,
            spec.options.config,
            spec.timeout_s,
            env=spec.env,
            tier=spec.tier,
            stall_timeout_s=spec.stall_timeout_s,
            policy=NO_RETRY_POLICY if spec.policy is None else spec.policy,
            inherit_env=False,  # spec.env is already the whole environment
            budget=spec.budget,
        )
    except KeyboardInterrupt:  # the run was cancelled; its metrics.json says so
        return CANCELLED_EXIT_CODE


def run(
    adapter: Annotated[str, typer.Option("--adapter", help="The adapter, e.g. mock.")],
    prompt_file: Annotated[
        Path, typer.Option("--prompt-file", help="The file holding the prompt.")
    ],
    workspace: Annotated[Path, typer.Option("--workspace", help="The folder the agent works in.")],
    output_dir: Annotated[
        Path,
        typer.Option("--output-dir", help="Where the logs and metrics.json go (created)."),
    ],
    model: Annotated[
        str | None,
        typer.Option("--model", help="The model the agent uses (default: $MODEL)."),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds allowed per attempt; then exit 124.")
    ] = DEFAULT_TIMEOUT_S,
    stall_timeout: Annotated[
        float | None,
        typer.Option("--stall-timeout", help="Kill an attempt silent for this many seconds."),
    ] = None,
    tier_id: Annotated[
        str | None, typer.Option("--tier-id", help="The tier's id (default: $TIER).")
    ] = None,
    tier_name: Annotated[
        str | None, typer.Option("--tier-name", help="The tier's readable name.")
    ] = None,
    tier_prompt: Annotated[
        str | None, typer.Option("--tier-prompt", help="The tier's system prompt.")
    ] = None,
    tools: Annotated[
        bool | None,
        typer.Option("--tools/--no-tools", help="Whether the agent may use tools."),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(
            "--policy",
            help="Retry with this policy: a name, or YAML like '{extends: agent_dispatch, "
            "max_attempts: 2}'; 'none' for one attempt (default: the policy for agent "
            "operations, agent_dispatch: 3 retries, 2 s, 4 s, 8 s).",
        ),
    ] = None,
    no_retry: Annotated[
        bool, typer.Option("--no-retry", help="One attempt, no retry (--policy none).")
    ] = False,
    adapter_option: Annotated[
        list[str] | None,
        typer.Option(
            "--adapter-option",
            help="KEY=VALUE (YAML) for the adapter, e.g. scenario=s.yaml or "
            "api_key_env=ANTHROPIC_API_KEY; repeatable.",
        ),
    ] = None,
    fallback: Annotated[
        list[str] | None,
        typer.Option(
            "--fallback",
            help="A candidate to move to when a failure calls for it: ADAPTER:MODEL, or YAML "
            "like '{adapter: openai-api, model: gpt-4.1, api_key_env: OPENAI_API_KEY}'; "
            "repeatable, tried in order (docs/fallback.md).",
        ),
    ] = None,
    context_window: Annotated[
        int | None,
        typer.Option(
            "--context-window",
            help="The model's context window (tokens): a context overflow then moves to a "
            "--fallback with a larger one.",
        ),
    ] = None,
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="The configuration file --policy names are looked up in "
            "(default: $BACKSTAY_CONFIG, else ./backstay.yaml if any).",
        ),
    ] = None,
    sets: _options.SetOption = None,
    budget_usd: Annotated[
        float | None,
        typer.Option(
            "--budget-usd",
            help="The run's budget in US dollars: no attempt (retry or --fallback) starts "
            "whose estimate does not fit what is left; then exit 5 (docs/budgets.md).",
        ),
    ] = None,
    budget_tokens: Annotated[
        int | None,
        typer.Option(
            "--budget-tokens",
            help="The run's budget in tokens, prompt and output (checked as --budget-usd).",
        ),
    ] = None,
    isolated_env: Annotated[
        bool,
        typer.Option(
            "--isolated-env",
            help="Give the agent (and each --fallback) only the variables api_key_env and "
            "pass_env name, not its provider's standard variables (listed below).",
        ),
    ] = False,
    no_gateway: NoGatewayOption = False,
    gateway_url: GatewayUrlOption = None,
) -> None:
    """Run one agent as an evaluation harness does, and exit with the run's exit code.

    0 on success, 124 on timeout, 2 for bad arguments (nothing runs), 5 when a spending
    budget (--budget-usd, --budget-tokens) had no room for the next attempt, else the
    agent's own code. Logs and metrics.json go to --output-dir (each retried attempt's own in
    attempt_N/). Transient failures are retried as the adapter reliability contract says
    unless --policy none or --no-retry. MODEL, TIER and RUN_NUMBER, as an evaluation
    harness sets them, stand in for --model and --tier-id and number the run.
    The agent takes its provider's standard variables (such as ANTHROPIC_API_KEY and
    ANTHROPIC_BASE_URL) from the environment, each --fallback those of its own adapter's
    provider; nothing else is taken unless named.
    """
    from backstay.config import harness_run, load_config, with_framework  # noqa: PLC0415
    from backstay.config.run.harness import NO_RETRY_POLICY  # noqa: PLC0415

    # The collector as a batch sets it (cli._batch_gc): most of a run's objects (the
    # configuration, the SDK's modules) live until it ends.
    with collector_for_batch():
        try:
            _check_unused(output_dir)
            config = load_config(config_file, overrides=sets or [])
            apply_log_level(config.log_level)
            registry = None if no_retry or policy == NO_RETRY_POLICY else config.registry
            spec = harness_run(
                adapter=adapter,
                model=model,
                prompt_file=prompt_file,
                workspace=workspace,
                output_dir=output_dir,
                timeout_s=timeout,
                stall_timeout_s=stall_timeout,
                tier_id=tier_id,
                tier_name=tier_name,
                tier_prompt=tier_prompt,
                tools_enabled=tools,
                policy=policy,
                no_retry=no_retry,
                adapter_options=adapter_option or (),
                registry=registry,
                fallbacks=fallback or (),
                context_window=context_window,
                inherit_env=not isolated_env,
                budget_usd=budget_usd,
                budget_tokens=budget_tokens,
            )
            # The configuration's frameworks.<adapter> section: the adapter's defaults.
            options = with_framework(spec.options, config.frameworks, used_by="--adapter is")
            spec = dataclasses.replace(spec, options=options)
            code = _start(
                spec,
                gateway=not no_gateway,
                gateway_url=gateway_url,
                registry=config.registry,
                rate_limits=config.engine_rate_limits(),
            )
        except ConfigError as err:
            raise usage_error(err) from None
    _record_run_number(spec)
    _report(spec, code)
    raise typer.Exit(code)
