"""``backstay resume``: continue the batch of a state directory after a crash, a human's
decision, a quota's reset or a raised spending budget; the same exit codes as
``backstay batch``."""

from __future__ import annotations

from collections.abc import Iterable
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
from backstay.cli._registration import finish_recording
from backstay.cli.batch import CONFIG_HELP
from backstay.engine.executor import DEFAULT_CONCURRENCY
from backstay.engine.suite_batch import read_identity
from backstay.errors import ConfigError
from backstay.store.location import StoreUnreachable

# The configuration, the executors and what a batch shows are imported when the command
# runs, not for its --help (tests/cli/test_startup.py).
if TYPE_CHECKING:
    from backstay.engine import TaskRecord


def _adapters_of(records: Iterable[TaskRecord]) -> set[str]:
    """Every adapter the tasks of ``records`` may run on: their own and their fallbacks'."""
    names = set()
    for record in records:
        names.add(record.spec.adapter)
        names.update(c.adapter for c in record.spec.fallbacks if c.adapter)
    return names


def resume(
    state_dir: _state.StateDirOption,
    concurrency: _state.ConcurrencyOption = DEFAULT_CONCURRENCY,
    lease_ttl: _state.LeaseOption = _state.DEFAULT_LEASE_TTL,
    config_file: Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP)] = None,
    sets: _state.SetOption = None,
    budget_usd: _state.BudgetUsdOption = None,
    budget_tokens: _state.BudgetTokensOption = None,
    serve_port: ServePortOption = None,
    executor_kind: ExecutorOption = DEFAULT_EXECUTOR,
    ray_address: RayAddressOption = None,
    store: _state.StoreOption = None,
    no_gateway: NoGatewayOption = False,
    gateway_url: GatewayUrlOption = None,
) -> None:
    """Continue the batch in --state-dir: every task that can run now runs.

    Interrupted attempts are tried again, retries wait what is left of their delay, paused
    tasks whose quota has reset and escalations resolved with retry or resume run again, and
    so do tasks paused at a spending budget once it has room (--budget-usd, --budget-tokens
    raise the batch's); finished tasks never do. Tasks a killed runner held are taken over
    once its claim lapses (--lease-ttl of that runner). Exit codes as for backstay batch.
    --executor ray drives the runs on a Ray cluster, as for backstay batch.
    """
    from backstay.cli._progress import showing_progress  # noqa: PLC0415 - see the imports
    from backstay.cli._report import report_run  # noqa: PLC0415
    from backstay.cli._suite_changes import suite_changes  # noqa: PLC0415
    from backstay.config import load_config  # noqa: PLC0415
    from backstay.executors.ray_executor import ClusterLost  # noqa: PLC0415

    try:
        executor = executor_for(executor_kind, ray_address)
        config = load_config(config_file, overrides=sets or [])
        apply_log_level(config.log_level)
        location = _state.store_location(store, state_dir, config=config)
        engine = _state.open_engine(
            state_dir,
            location=location,
            concurrency=concurrency,
            guard_settings=_state.guard_settings(lease_ttl),
            breaker=config.engine_breaker(),
            rate_limits=config.engine_rate_limits(),
            retry_budget=config.engine_retry_budget(),
            executor=executor,
        )
        identity = read_identity(state_dir)
    except ConfigError as err:
        raise usage_error(err) from None
    with engine:
        _state.keep_budget(engine, None, budget_usd, budget_tokens)
        try:  # the runs a batch killed while recording them left (cli._registration)
            recorded = finish_recording(engine, state_dir=state_dir, config=config)
        except ConfigError as err:
            raise usage_error(err) from None
        if recorded is not None:
            _state.say(f"recorded the {recorded[0]} runs left of the batch's {recorded[1]}")
        records = engine.store.tasks()
        flags = _state.batch_flags(state_dir, location)
        for line in suite_changes(
            records, identity, state_dir=state_dir, config=config, flags=flags
        ):
            _state.say(line)
        states = {record.operation_id: record.state for record in records}
        try:
            with (
                observed(
                    state_dir,
                    serve_port if serve_port is not None else config.metrics_port,
                    config.otel_settings(),
                    location,
                ),
                showing_progress(states),
                agent_gateway(
                    _adapters_of(records),
                    # As the batch ran: its suite's ``gateway: false`` holds (batch.json).
                    enabled=not no_gateway
                    and (identity is None or identity.gateway or gateway_url is not None),
                    url=gateway_url,
                    registry=config.registry,
                    rate_limits=config.engine_rate_limits(),
                    limiters=pacing_limiters(engine),
                    parallel=concurrency,
                    on_workers=executor is not None,
                ),
                collector_for_batch(),
            ):
                summary = engine.resume_sync()
        except ConfigError as err:
            raise usage_error(err) from None
        except KeyboardInterrupt:
            raise _state.interrupted(state_dir) from None
        except ClusterLost as err:
            raise cluster_lost(err, state_dir) from None
        except StoreUnreachable as err:
            raise _state.store_lost(err, state_dir) from None
        left_for_resume(executor, state_dir)
        name = "" if identity is None else f" {identity.workflow_id}"
        report_run(
            engine,
            summary,
            operations=None,
            state_dir=state_dir,
            title=f"backstay resume{name} ({state_dir})",
        )
    raise typer.Exit(_state.exit_code(summary))
