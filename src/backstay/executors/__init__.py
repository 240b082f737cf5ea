"""Executors: where a batch's tasks are driven when not in the engine's own process.

* ``RayExecutor`` (``RaySettings``): each run a Ray task on a cluster, a local one started
  for the batch or an existing one (the ``ray`` extra: ``pip install 'backstay[ray]'``);
* ``WorkerLost``: the event of a run whose worker died; ``ClusterLost``: the cluster did.

Ray itself is imported only when a batch is placed on it. See ``docs/scale-out.md``.
"""

from __future__ import annotations

from backstay.engine.executor import Executor
from backstay.executors._ray_cluster import RAY_EXTRA_HINT
from backstay.executors.events import WorkerLost
from backstay.executors.ray_executor import ClusterLost, RayExecutor
from backstay.executors.ray_settings import RaySettings

__all__ = [
    "RAY_EXTRA_HINT",
    "ClusterLost",
    "Executor",
    "RayExecutor",
    "RaySettings",
    "WorkerLost",
]
