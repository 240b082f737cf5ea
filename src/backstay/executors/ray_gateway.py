"""The gateway of the agent CLI runs a ``RayExecutor`` places: one per worker process.

A local batch sends its agent CLIs through one gateway started in its own process
(``backstay.cli._gateway_runs``). A Ray batch's CLIs run on the workers, possibly on
other machines, where the driver's 127.0.0.1 is not theirs; so the driver hands every
worker a ``WorkerGateway`` (in its ``WorkerJob``: what the gateway it would have started
is, never a key) and each worker process runs a gateway of its own:

* started **lazily**, on 127.0.0.1 and a free port of the worker's machine, when the
  first agent-CLI attempt of that process opens its run (a worker that drives only API
  tasks starts none); kept for the next runs placed on it, and stopped when the worker
  process exits (it is a thread of that process: nothing outlives it);
* each attempt gets a run token of its own as its key, mapped to its run and to the real
  key this worker reads from its own environment (``backstay.adapters.gateway_wiring``):
  the real key never reaches the agent process, the CLI's own retries stay off;
* it retries with the batch's gateway policy and paces at the worker engine's rate
  limiters, the ones its API attempts use: with a Redis store those live in Redis and
  hold across the cluster; with SQLite (one machine) each worker process has its own,
  as the workers' API attempts do (``docs/scale-out.md``);
* its request events carry the run's task, so the worker records them in
  ``events.jsonl`` and hands them to the driver with the task's other events (once);
  when the driver exports OpenTelemetry spans (``WorkerGateway.spans``), so are its
  request spans, as ``SpanRecorded`` events the driver makes spans of under the
  run's attempt (``backstay.gateway.span_records``).

With ``--gateway URL`` the plan names that shared gateway instead: every worker opens its
runs there, with ``$BACKSTAY_GATEWAY_TOKEN`` of its own environment. ``--no-gateway`` or a
suite's ``gateway: false``: no plan, and the workers' CLIs go straight to their providers.

The driver sets the plan for the block of its batch with ``use_worker_gateway``; the
executor reads it with ``current_worker_gateway``.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import dataclasses
import importlib.util
import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from backstay.errors import ConfigError
from backstay.policy.retry import RetryPolicy

if TYPE_CHECKING:
    from backstay.adapters.gateway_wiring import RunCounts, RunGateway
    from backstay.engine.runner import Engine
    from backstay.gateway.runs import LocalRunGateway
    from backstay.gateway.server import Gateway

__all__ = [
    "GATEWAY_TOKEN_ENV",
    "WorkerGateway",
    "WorkerRunGateway",
    "current_worker_gateway",
    "use_worker_gateway",
    "worker_gateway",
]

# The variable holding a shared gateway's token, on every worker (as ``backstay gateway``
# and ``--gateway`` read it).
GATEWAY_TOKEN_ENV: Final = "BACKSTAY_GATEWAY_TOKEN"  # noqa: S105 - a variable name
_ON_WORKER: Final = "on a Ray worker"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WorkerGateway:
    """The gateway a batch's workers send their agent CLIs through: ``policy`` and
    ``deadline_s`` of the gateway each worker starts, or ``url``, a shared gateway (its
    token read from each worker's ``$BACKSTAY_GATEWAY_TOKEN``); ``parallel``: the
    batch's concurrency (a shared gateway's allowance shares); ``spans``: the driver
    exports OpenTelemetry spans, so each worker's gateway records its request spans as
    events for it (``backstay.gateway.span_records``)."""

    policy: RetryPolicy
    deadline_s: float
    url: str | None = None
    parallel: int = 1
    spans: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.policy, RetryPolicy):
            raise ConfigError(f"must be a RetryPolicy, got {self.policy!r}", where="policy")
        if isinstance(self.parallel, bool) or not isinstance(self.parallel, int):
            raise ConfigError(f"must be an integer, got {self.parallel!r}", where="parallel")
        if self.parallel < 1:
            raise ConfigError(f"must be at least 1, got {self.parallel}", where="parallel")
        if not self.deadline_s > 0:
            raise ConfigError(f"must be above 0, got {self.deadline_s!r}", where="deadline_s")


_PLAN: contextvars.ContextVar[WorkerGateway | None] = contextvars.ContextVar(
    "backstay_worker_gateway", default=None
)


def current_worker_gateway() -> WorkerGateway | None:
    """The gateway the workers of a batch placed now are to use, if any."""
    return _PLAN.get()


@contextlib.contextmanager
def use_worker_gateway(plan: WorkerGateway | None) -> Iterator[None]:
    """Give the Ray batches driven in this context ``plan`` (``None``: no gateway)."""
    reset = _PLAN.set(plan)
    try:
        yield
    finally:
        _PLAN.reset(reset)


class WorkerRunGateway:
    """A gateway in this worker process, started when the first run is opened (until
    then it is only a plan), as the agent adapters see a gateway
    (``backstay.adapters.gateway_wiring.RunGateway``); ``stop`` ends it."""

    def __init__(self, plan: WorkerGateway, limiters: Any = None) -> None:
        self._plan = plan
        self._limiters = limiters
        self._lock = threading.Lock()
        self._gateway: Gateway | None = None
        self._runs: LocalRunGateway | None = None

    @property
    def started(self) -> bool:
        return self._gateway is not None

    @property
    def calls_block(self) -> bool:
        """Whether opening a run would start the gateway first (a server started on a
        thread of its own, waited for): ``aopen_run`` then makes the call on a worker
        thread, so the other attempts of the worker's loop go on meanwhile."""
        return self._gateway is None

    @property
    def url(self) -> str:
        return self._start().url

    @property
    def deadline_s(self) -> float:
        return self._plan.deadline_s

    def _start(self) -> LocalRunGateway:
        with self._lock:
            if self._runs is not None:
                return self._runs
            if importlib.util.find_spec("aiohttp") is None:
                raise ConfigError(
                    "the gateway of the agent runs needs aiohttp on every Ray node: "
                    "pip install 'backstay[gateway]' there, or run with --no-gateway",
                    where=_ON_WORKER,
                )
            from backstay.gateway import Gateway, GatewaySettings  # noqa: PLC0415
            from backstay.gateway.runs import LocalRunGateway, RunTokens  # noqa: PLC0415
            from backstay.gateway.span_records import recording_provider  # noqa: PLC0415
            from backstay.policy.limiters import RateLimiterRegistry  # noqa: PLC0415

            tokens = RunTokens()
            limiters = self._limiters if self._limiters is not None else RateLimiterRegistry()
            settings = GatewaySettings(port=0, policy=self._plan.policy)
            # The driver's trace: each request span recorded as an event for it.
            spans = recording_provider() if self._plan.spans else None
            gateway = Gateway(
                settings, runs=tokens, limiters=limiters, tracer_provider=spans
            ).start()
            self._gateway = gateway
            self._runs = LocalRunGateway(gateway.url, tokens, self._plan.deadline_s)
            atexit.register(self.stop)
            return self._runs

    def open_run(self, **run: Any) -> str:
        """A token for the run (``RunGateway.open_run``'s arguments); the gateway is
        started first if it is not running yet."""
        return self._start().open_run(**run)

    def close_run(self, token: str) -> RunCounts | None:
        runs = self._runs
        return None if runs is None else runs.close_run(token)

    def stop(self) -> None:
        """Stop the gateway, if it was started (the worker exits)."""
        with self._lock:
            gateway, self._gateway, self._runs = self._gateway, None, None
        if gateway is not None:
            gateway.stop()


# The gateways of this worker process, by plan (its repr): a worker runs many tasks of
# one batch.
_GATEWAYS: Final[dict[str, RunGateway]] = {}


def worker_gateway(plan: WorkerGateway | None, engine: Engine) -> RunGateway | None:
    """The gateway this worker sends the agent CLIs of ``plan``'s batch through (``None``:
    none): the shared one it names, or this process's own (``WorkerRunGateway``, pacing
    at ``engine``'s rate limiters), made once per process and batch."""
    if plan is None:
        return None
    key = repr(plan)
    found = _GATEWAYS.get(key)
    if found is None:
        found = _GATEWAYS[key] = _shared(plan) if plan.url else _own(plan, engine)
    return found


def _own(plan: WorkerGateway, engine: Engine) -> WorkerRunGateway:
    pacing = engine.pacing
    return WorkerRunGateway(plan, None if pacing is None else pacing.limiters)


def _shared(plan: WorkerGateway) -> RunGateway:
    from backstay.gateway.run_admin import RemoteRunGateway  # noqa: PLC0415

    assert plan.url is not None  # noqa: S101 - only called with one
    token = os.environ.get(GATEWAY_TOKEN_ENV, "").strip()
    if not token:
        raise ConfigError(
            f"a shared gateway opens runs only with its token: set ${GATEWAY_TOKEN_ENV}",
            where=f"--gateway ({_ON_WORKER})",
        )
    return RemoteRunGateway(
        plan.url, token, where=f"--gateway ({_ON_WORKER})", parallel=plan.parallel
    )
