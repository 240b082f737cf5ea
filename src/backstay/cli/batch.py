"""``backstay batch``: run every run of a suite durably in a state directory, and exit with
what the batch came to (0 all succeeded, 3 some failed, 4 some wait, 5 a spending budget
was reached)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from backstay.cli import _state
from backstay.cli._batch_gc import collector_for_batch
from backstay.cli._errors import usage_error
from backstay.cli._executor import (
    DEFAULT_EXECUTOR,
    ExecutorOption,
    RayAddressOption,
    cluster_lost,
    executor_for,
    left_for_resume,
)
from backstay.cli._gateway_runs import (
    GatewayUrlOption,
    NoGatewayOption,
    agent_gateway,
    pacing_limiters,
)
from backstay.cli._logging import apply_log_level
from backstay.cli._observe import observed
from backstay.cli._options import ServePortOption
from backstay.cli._registration import early_start
from backstay.engine.executor import DEFAULT_CONCURRENCY
from backstay.engine.states import TaskState
from backstay.errors import ConfigError
from backstay.store.location import StoreUnreachable

# The configuration, the engine, the executors and what a batch shows are imported when the
# command runs, not for its --help (tests/cli/test_startup.py).
if TYPE_CHECKING:
    from backstay.engine import Engine, SuiteBatch
    from backstay.engine.registration import EarlyStart

CONFIG_HELP = (
    "The configuration file whose policies the suite may name and whose "
    "retry.circuit_breaker the batch's circuit breakers use, and whose observe.otel "
    "says where traces go (default: $BACKSTAY_CONFIG, else ./backstay.yaml if any)."
)


def run_batch(engine: Engine, batch: SuiteBatch, early: EarlyStart | None = None) -> int:
    """Run ``batch`` on ``engine`` showing its progress, report it; its exit code.
    ``early``: recorded a page at a time while its first runs run (``_registration``)."""
    from backstay.cli._progress import showing_progress  # noqa: PLC0415 - see the imports
    from backstay.cli._report import report_run  # noqa: PLC0415

    known = {record.operation_id: record.state for record in engine.store.tasks()}
    # The runs' ids without making their specs (made a page at a time as they are recorded).
    states = dict.fromkeys(batch.operation_ids(), TaskState.PENDING)
    states.update((op, state) for op, state in known.items() if op in states)
    with showing_progress(states), collector_for_batch():
        engine.run_sync(batch.specs, early=early)
    summary = engine.summary(states)
    report_run(
        engine,
        summary,
        operations=states.keys(),
        state_dir=batch.state_dir,
        title=f"backstay batch {batch.workflow_id} ({batch.state_dir})",
    )
    return _state.exit_code(summary)


def batch(
    file: Annotated[Path, typer.Argument(metavar="SUITE.yaml", help="The suite file to run.")],
    state_dir: _state.StateDirOption,
    concurrency: _state.ConcurrencyOption = DEFAULT_CONCURRENCY,
    config_file: Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP)] = None,
    sets: _state.SetOption = None,
    lease_ttl: _state.LeaseOption = _state.DEFAULT_LEASE_TTL,
    budget_usd: _state.BudgetUsdOption = None,
    budget_tokens: _state.BudgetTokensOption = None,
    isolated_env: Annotated[
        bool,
        typer.Option(
            "--isolated-env",
            help="Give the agents only the variables api_key_env and pass_env name, not "
            "their providers' standard variables (listed below).",
        ),
    ] = False,
    serve_port: ServePortOption = None,
    executor_kind: ExecutorOption = DEFAULT_EXECUTOR,
    ray_address: RayAddressOption = None,
    store: _state.StoreOption = None,
    allow_non_empty: _state.AllowNonEmptyOption = False,
    no_gateway: NoGatewayOption = False,
    gateway_url: GatewayUrlOption = None,
) -> None:
    """Run every run of the suite FILE (task × tier × run) in --state-dir.

    Running it again on the same state directory runs only what has not finished; a killed
    batch continues with backstay resume, which reads the providers' variables from its
    own environment again (they are never stored). Exit codes: 0 every task succeeded, 3
    some failed or were cancelled, 4 some wait (paused, escalated), 5 a spending budget
    paused tasks (budget_exceeded), 2 bad input or a damaged state directory (nothing
    ran), 6 the shared store stopped answering, 7 the file system refused a write (full,
    read-only; nothing recorded was lost). With --executor ray each run is a task on a Ray
    cluster (see docs/scale-out.md).
    """
    from backstay.config import load_config, load_suite, with_frameworks  # noqa: PLC0415
    from backstay.engine.suite_batch import SuiteBatch, suite_adapters  # noqa: PLC0415
    from backstay.executors.ray_executor import ClusterLost  # noqa: PLC0415

    try:
        executor = executor_for(executor_kind, ray_address)
        config = load_config(config_file, overrides=sets or [])
        apply_log_level(config.log_level)
        suite = with_frameworks(load_suite(file, registry=config.registry), config.frameworks)
        adapters = suite_adapters(suite)
        _state.check_not_a_file(state_dir)
        _state.check_fresh(state_dir, allow=allow_non_empty)
        location = _state.store_location(store, state_dir, config=config)
        _state.check_startable(state_dir, location)
        # Reads the agents' environment first: an unset key variable leaves nothing behind.
        opened = SuiteBatch.open(
            suite,
            state_dir,
            inherit_env=not isolated_env,
            store=_state.recorded_store(location, state_dir),
        )
        engine = _state.open_engine(
            state_dir,
            create=True,
            location=location,
            adapters=adapters,
            concurrency=concurrency,
            guard_settings=_state.guard_settings(lease_ttl),
            breaker=config.engine_breaker(),
            rate_limits=config.engine_rate_limits(),
            retry_budget=config.engine_retry_budget(),
            tenant_budgets=suite.tenants,
            executor=executor,
        )
        _state.keep_budget(engine, suite.budget, budget_usd, budget_tokens)
    except (ConfigError, OSError) as err:
        raise _state.run_failed(err, state_dir) from None
    with engine:
        # Each page's workspaces are made as it is recorded, or all of them now.
        early = early_start(suite, opened, inherit_env=not isolated_env)
        try:
            if early is None:
                opened.prepare()
        except OSError as err:
            raise _state.run_failed(err, state_dir) from None
        try:
            port = serve_port if serve_port is not None else config.metrics_port
            with (
                observed(state_dir, port, config.otel_settings(), location),
                agent_gateway(
                    adapters,
                    enabled=not no_gateway and (suite.gateway or gateway_url is not None),
                    url=gateway_url,
                    registry=config.registry,
                    rate_limits=config.engine_rate_limits(),
                    limiters=pacing_limiters(engine),
                    parallel=concurrency,
                    on_workers=executor is not None,
                ),
            ):
                code = run_batch(engine, opened, early)
        except ConfigError as err:
            raise usage_error(err) from None
        except KeyboardInterrupt:
            raise _state.interrupted(state_dir) from None
        except ClusterLost as err:
            raise cluster_lost(err, state_dir) from None
        except StoreUnreachable as err:
            raise _state.store_lost(err, state_dir) from None
        left_for_resume(executor, state_dir)
    raise typer.Exit(code)
