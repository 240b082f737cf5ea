"""``RayExecutor``: a batch's runs placed on a Ray cluster, one Ray task per run.

::

    with Engine("state/", concurrency=8, executor=RayExecutor(RaySettings())) as engine:
        engine.run_sync(specs)        # a local cluster, started for the batch

The engine records the specs in the shared store first; the executor then places each
task as a Ray task running ``drive_on_worker`` (``backstay.executors.ray_worker``), at most
the engine's ``concurrency`` at once. Each worker opens the stores from their location,
claims the task's operation lease and records every transition itself, so the driver
holds no state that a crash could lose. The agent CLIs of the runs go through a gateway
of each worker process (or the batch's shared one), as the batch's command set it
(``backstay.executors.ray_gateway``).

**Ray only places work.** Its tasks have ``max_retries=0`` and no ``retry_exceptions``:
Ray never runs a task again by itself. backstay's own rules decide:

* a run that returns: its events are emitted here (progress, sinks), nothing else;
* a worker or node that died (``WorkerCrashedError``, ``NodeDiedError``,
  ``OutOfMemoryError``, a lost object): ``WorkerLost`` is emitted and the task is placed
  again. The new worker finds the dead worker's lease — taken over at once when its
  process is certainly gone from this host, else once it lapses — and takes the task up
  as ``backstay resume`` would: an attempt cut short is recorded ``interrupted`` and
  counts against the task's retry budget, a recorded success is never dispatched again.
  After ``max_worker_losses`` losses the task is left for ``backstay resume``;
* an error raised by the driving itself (a secret missing on a worker, a bad adapter
  setting) stops the batch with that error, as it would stop a local batch;
* the cluster itself gone (the local raylet or the head killed, seen from a run's
  ``NodeDiedError`` with no live node left, or from the head refusing the driver's
  connection every ``WATCH_EVERY_S`` twice in a row): ``ClusterLost``; the store says
  where each task stands and ``backstay resume`` continues.

If the driver dies, Ray ends its tasks; their leases lapse (or their processes are seen
dead) and ``backstay resume`` — with any executor, from any machine sharing the store —
takes the batch up.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Final

from backstay.engine.records import TaskRecord
from backstay.engine.runner import Engine
from backstay.errors import BackstayError, ConfigError
from backstay.events import BUS
from backstay.executors._ray_cluster import ray_session
from backstay.executors._stores import store_location
from backstay.executors.events import WorkerLost
from backstay.executors.ray_gateway import current_worker_gateway
from backstay.executors.ray_settings import RaySettings
from backstay.executors.ray_worker import WorkerJob, WorkerReport, drive_on_worker

__all__ = [
    "NODES_TIMEOUT_S",
    "ON_WORKER",
    "WATCH_EVERY_S",
    "WATCH_MISSES",
    "ClusterLost",
    "RayExecutor",
]

ON_WORKER: Final = (
    "on a Ray worker: every node needs the variables, files and adapters the runs use"
)
# How long the cluster may take to say which nodes are still alive.
NODES_TIMEOUT_S: Final = 10.0
# While runs are out, the head is called that often; so many refusals in a row mean it
# is gone (seen within ~15 s: Ray itself ends a driver whose head is gone after 60 s).
WATCH_EVERY_S: Final = 5.0
WATCH_MISSES: Final = 2


class ClusterLost(BackstayError):
    """The Ray cluster went away during the batch (its head or the local node died).
    Nothing recorded is lost: ``backstay resume`` continues the batch."""


def _lost_errors(ray: ModuleType) -> tuple[type[BaseException], ...]:
    """Ray's exceptions for a run whose worker, node or result died with it."""
    errors = ray.exceptions
    return (
        errors.WorkerCrashedError,
        errors.NodeDiedError,
        errors.OutOfMemoryError,
        errors.ObjectLostError,
    )


def _cluster_errors(ray: ModuleType) -> tuple[type[BaseException], ...]:
    """Ray's exceptions for a cluster this driver can no longer use."""
    errors = ray.exceptions
    return (errors.LocalRayletDiedError, errors.RaySystemError, errors.RpcError)


class RayExecutor:
    """Places an engine's tasks on Ray; see the module docstring."""

    def __init__(self, settings: RaySettings | None = None) -> None:
        self.settings = settings or RaySettings()
        # Tasks left for `backstay resume` after too many lost workers, in the last batch.
        self.left: list[str] = []

    async def drive(self, engine: Engine, records: Sequence[TaskRecord]) -> None:
        """Drive every task of ``records`` on the cluster; see the module docstring."""
        self.left = []
        if not records:
            return
        job = WorkerJob(
            store=store_location(engine),
            store_unavailable=str(engine.stores.location.unavailable),
            state_dir=str(engine.state_dir),
            guard_settings=engine.guard.settings,
            breaker=engine.breaker,
            fallback_rules=engine.fallback_rules,
            event_log=engine.event_log,
            rate_limits=engine.rate_limits,
            retry_budget=engine.retry_budget,
            gateway=current_worker_gateway(),
        )
        with ray_session(self.settings, concurrency=engine.concurrency) as ray:
            remote = ray.remote(drive_on_worker).options(
                num_cpus=self.settings.task_cpus, max_retries=0, retry_exceptions=False
            )
            slots = asyncio.Semaphore(engine.concurrency)

            async def one(record: TaskRecord) -> None:
                async with slots:
                    await self._place(ray, remote, job, record)

            try:
                async with asyncio.TaskGroup() as group:
                    watch = group.create_task(_watch(ray))
                    await asyncio.gather(*(group.create_task(one(r)) for r in records))
                    watch.cancel()
            except BaseExceptionGroup as failed:
                raise failed.exceptions[0] from None

    async def _place(
        self, ray: ModuleType, remote: Any, job: WorkerJob, record: TaskRecord
    ) -> None:
        """Run ``record``'s task on a worker, placing it again after each lost worker."""
        op = record.operation_id
        losses = 0
        while True:
            try:
                report: WorkerReport = await remote.remote(job, op)
            except _lost_errors(ray) as exc:
                if isinstance(exc, ray.exceptions.NodeDiedError) and not await _any_node(ray):
                    raise ClusterLost(
                        "the Ray cluster has no node left: backstay resume continues the batch"
                    ) from None
                losses += 1
                again = losses < self.settings.max_worker_losses
                BUS.emit(
                    WorkerLost(
                        operation=op,
                        error=f"{type(exc).__name__}: {_first_line(exc)}",
                        losses=losses,
                        placed_again=again,
                    )
                )
                if again:
                    continue
                self.left.append(op)
                return
            except ray.exceptions.RayTaskError as exc:
                cause = exc.cause
                if isinstance(cause, ConfigError):
                    raise ConfigError(f"{cause} ({ON_WORKER})") from None
                if isinstance(cause, BaseException):
                    raise cause from None
                raise
            except _cluster_errors(ray) as exc:
                raise ClusterLost(
                    f"the Ray cluster was lost ({type(exc).__name__}): backstay resume "
                    "continues the batch"
                ) from None
            for event in report.events:
                BUS.emit(event)
            return


async def _watch(ray: ModuleType) -> None:
    """Raise ``ClusterLost`` once the cluster's head (its GCS) has refused a connection
    twice in a row, checked every ``WATCH_EVERY_S``: a dead head never reports its runs'
    deaths (and Ray ends this process a minute later), so the driver looks for itself,
    with a plain TCP connection (Ray's own client blocks while the head is away)."""
    host, _, port = str(ray.get_runtime_context().gcs_address).rpartition(":")
    misses = 0
    while True:
        await asyncio.sleep(WATCH_EVERY_S)
        answered = await asyncio.to_thread(_accepts, host, int(port))
        misses = 0 if answered else misses + 1
        if misses >= WATCH_MISSES:
            raise ClusterLost(
                "the Ray cluster stopped answering (its head is gone): backstay resume "
                "continues the batch"
            )


def _accepts(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=NODES_TIMEOUT_S).close()
    except OSError:
        return False
    return True


async def _any_node(ray: ModuleType) -> bool:
    """Whether the cluster still has a live node (``False`` too when it cannot say within
    ``NODES_TIMEOUT_S``: its head is gone). Asked on a daemon thread of its own: Ray's
    call blocks while the head is away, and must not keep the driver from exiting."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[bool] = loop.create_future()

    def ask() -> None:
        try:
            alive = any(node.get("Alive") for node in ray.nodes())
        except Exception:  # noqa: BLE001 - whatever Ray raises, the cluster cannot be used
            alive = False

        def settle() -> None:
            if not answer.done():
                answer.set_result(alive)

        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(settle)

    threading.Thread(target=ask, name="backstay-ray-nodes", daemon=True).start()
    try:
        return await asyncio.wait_for(answer, NODES_TIMEOUT_S)
    except TimeoutError:
        return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
