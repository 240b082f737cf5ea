"""The gateway of ``backstay run`` / ``batch`` / ``resume``: when any of their adapters
drives an agent CLI (it declares a ``gateway_wiring``), one gateway is started in this
process (on a thread of its own, a free port of 127.0.0.1) for their whole run, every
attempt of those adapters goes through it with a run token of its own as its key
(``backstay.adapters.gateway_wiring``), and it is stopped at the end. ``--no-gateway``
sends the agents straight to their providers; ``--gateway URL`` uses a shared gateway
instead (``backstay gateway --agent-runs``), which opens the runs for the token in
``$BACKSTAY_GATEWAY_TOKEN``. With ``--executor ray`` the agent CLIs run on the workers:
each worker process starts a gateway of its own, or opens its runs at the shared one
(``backstay.executors.ray_gateway``)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Final

import typer

from backstay.adapters.gateway_wiring import RunGateway, use_gateway
from backstay.adapters.registry import adapter_class
from backstay.errors import ConfigError

if TYPE_CHECKING:
    from backstay.engine import Engine
    from backstay.engine.stores import StoreBundle
    from backstay.gateway.runs import RunTokens
    from backstay.policy import PolicyRegistry
    from backstay.policy.protocols import LimiterRegistryLike
    from backstay.policy.ratelimit import RateLimitSettings


def _say(text: str) -> None:
    from rich.console import Console  # noqa: PLC0415 - only to say this
    from rich.markup import escape  # noqa: PLC0415

    Console(stderr=True, soft_wrap=True).print(escape(text), highlight=False)


__all__ = [
    "DEFAULT_DEADLINE_S",
    "GATEWAY_TOKEN_ENV",
    "GatewayUrlOption",
    "NoGatewayOption",
    "agent_gateway",
    "pacing_limiters",
    "shared_runs",
    "wired",
]

# When the gateway's policy has no deadline, what a CLI's request timeout is raised above.
DEFAULT_DEADLINE_S: Final = 900.0
# The variable holding a shared gateway's token (as ``backstay gateway`` reads it).
GATEWAY_TOKEN_ENV: Final = "BACKSTAY_GATEWAY_TOKEN"  # noqa: S105 - a variable name

NoGatewayOption = Annotated[
    bool,
    typer.Option(
        "--no-gateway",
        help="Send agent CLIs straight to their providers instead of through a backstay "
        "gateway started for the run (each attempt with a token of its own as its key; "
        "docs/gateway.md, Agent runs).",
    ),
]
GatewayUrlOption = Annotated[
    str | None,
    typer.Option(
        "--gateway",
        metavar="URL",
        help="Send agent CLIs through this shared gateway (backstay gateway --agent-runs) "
        f"instead of one started for the run; its token from ${GATEWAY_TOKEN_ENV}.",
    ),
]


def wired(adapters: Iterable[str]) -> list[str]:
    """Those of ``adapters`` whose agent CLI can be pointed at a gateway."""
    found = []
    for name in adapters:
        try:
            cls = adapter_class(name)
        except ConfigError:
            continue
        if getattr(cls, "gateway_wiring", None) is not None:
            found.append(name)
    return found


def pacing_limiters(engine: Engine) -> LimiterRegistryLike | None:
    """The rate limiters ``engine`` paces at (``None``: it has no rate limits), for the
    gateway of its batch to pace at too."""
    pacing = engine.pacing
    return None if pacing is None else pacing.limiters


def shared_runs(bundle: StoreBundle | None) -> RunTokens:
    """The run tokens of ``backstay gateway --agent-runs``: a run opened with its task's
    budget scopes has each request held against the spend ledger of the store
    (``--store``), or without one against the allowance the run carries (the room its
    engine reserved for it; ``backstay.engine.shared_budget``)."""
    from backstay.engine.shared_budget import SharedBudgets  # noqa: PLC0415
    from backstay.gateway.runs import RunTokens  # noqa: PLC0415

    return RunTokens(budgets=SharedBudgets(None if bundle is None else bundle.spend))


def _tracer_provider() -> object:
    """Where the command's OpenTelemetry sink sends its spans (the provider backstay made
    for ``observe.otel``, or the application's), so that each request's span joins its
    attempt's trace; ``None`` (OpenTelemetry's global one) without such a sink."""
    from backstay.events import BUS  # noqa: PLC0415

    for sink in BUS.sinks:
        found = getattr(sink, "tracer_provider", None)
        if found is not None:
            return found
    return None


def _shared(url: str, environ: Mapping[str, str], parallel: int) -> RunGateway:
    """The shared gateway at ``url``, with the token of ``$BACKSTAY_GATEWAY_TOKEN``; runs
    held to allowances get a share of a shared budget's room among ``parallel``."""
    from backstay.gateway import Upstreams  # noqa: PLC0415
    from backstay.gateway.run_admin import RemoteRunGateway  # noqa: PLC0415

    token = environ.get(GATEWAY_TOKEN_ENV, "").strip()
    if not token:
        raise ConfigError(
            f"a shared gateway opens runs only with its token: set ${GATEWAY_TOKEN_ENV}",
            where="--gateway",
        )
    try:
        checked = Upstreams.all(url).anthropic  # an http(s) URL, no trailing slash
    except ConfigError as err:
        raise ConfigError(err.reason, where="--gateway") from None
    return RemoteRunGateway(checked, token, parallel=parallel)


@contextlib.contextmanager
def agent_gateway(
    adapters: Iterable[str],
    *,
    enabled: bool = True,
    url: str | None = None,
    registry: PolicyRegistry | None = None,
    rate_limits: Mapping[str, RateLimitSettings] | None = None,
    limiters: LimiterRegistryLike | None = None,
    parallel: int | None = None,
    on_workers: bool = False,
) -> Iterator[str | None]:
    """A gateway for the agent runs of ``adapters`` while the block runs (its URL), or
    nothing (``None``) when none of them drives an agent CLI or ``enabled`` is false.
    ``url``: a shared gateway instead of one started here (``ConfigError`` when it cannot
    be reached or refuses the token). The gateway started here retries with
    ``registry``'s policy ``gateway`` (``retry.policies.gateway`` of the configuration),
    else ``GATEWAY_POLICY``, and paces at ``rate_limits`` (``retry.rate_limits``: a ceiling
    per provider, model or API key, the headers teaching the rest); a shared one keeps its
    own. ``limiters``: the engine's registry of those limits (``pacing_limiters``), paced
    at instead of one of the gateway's own, so that the batch's API tasks and CLI sessions
    of one provider or key share one limiter (in Redis with a Redis store). ``parallel``:
    the attempts that can run at once here (the engine's concurrency; default
    ``DEFAULT_CONCURRENCY``): through a shared gateway without a spend ledger, each run's
    first allowance is that share of the room of a budget it shares with other tasks
    (``backstay.engine.run_allowance``). ``on_workers``: the runs are placed on Ray
    workers, each of which starts a gateway of its own (``executors.ray_gateway``): none is
    started here, the workers are handed the plan only (yields ``None``)."""
    if url is not None and not enabled:
        raise ConfigError("cannot be given with --no-gateway", where="--gateway")
    if not enabled or not wired(adapters):
        yield None
        return
    if url is not None:
        from backstay.engine.executor import DEFAULT_CONCURRENCY  # noqa: PLC0415
        from backstay.executors.ray_gateway import WorkerGateway, use_worker_gateway  # noqa: PLC0415
        from backstay.gateway.settings import configured_policy  # noqa: PLC0415

        shares = DEFAULT_CONCURRENCY if parallel is None else parallel
        # Ray workers open their runs at the same shared gateway.
        plan = WorkerGateway(
            policy=configured_policy(registry),
            deadline_s=DEFAULT_DEADLINE_S,
            url=url,
            parallel=shares,
        )
        with use_gateway(_shared(url, os.environ, shares)), use_worker_gateway(plan):
            yield url
        return
    if importlib.util.find_spec("aiohttp") is None:
        _say(
            "backstay: agent CLIs go straight to their providers: the gateway needs aiohttp "
            "(pip install 'backstay[gateway]'; --no-gateway says so)"
        )
        yield None
        return
    # Imported here: the gateway (and aiohttp) loads only for runs of agent CLIs.
    from backstay.executors.ray_gateway import WorkerGateway, use_worker_gateway  # noqa: PLC0415
    from backstay.gateway import Gateway, GatewaySettings  # noqa: PLC0415
    from backstay.gateway.runs import LocalRunGateway, RunTokens  # noqa: PLC0415
    from backstay.gateway.settings import configured_policy  # noqa: PLC0415
    from backstay.policy.limit_keys import credential_limits, provider_limits  # noqa: PLC0415
    from backstay.policy.limiters import RateLimiterRegistry  # noqa: PLC0415

    settings = GatewaySettings(port=0, policy=configured_policy(registry))
    if on_workers:
        # Ray workers each start a gateway of their own; none of the runs is placed here.
        plan = WorkerGateway(
            policy=settings.policy,
            deadline_s=settings.policy.deadline_s or DEFAULT_DEADLINE_S,
            parallel=parallel or 1,
            spans=_tracer_provider() is not None,  # their request spans, for this trace
        )
        with use_worker_gateway(plan):
            yield None
        return
    runs = RunTokens()
    if limiters is None:
        limiters = RateLimiterRegistry(credential_limits(provider_limits(rate_limits or {})))
    deadline = settings.policy.deadline_s or DEFAULT_DEADLINE_S
    with (
        Gateway(
            settings, runs=runs, tracer_provider=_tracer_provider(), limiters=limiters
        ) as gateway,
        use_gateway(LocalRunGateway(gateway.url, runs, deadline)),
        # Ray workers each start a gateway of their own, as this one.
        use_worker_gateway(
            WorkerGateway(policy=settings.policy, deadline_s=deadline, parallel=parallel or 1)
        ),
    ):
        yield gateway.url
