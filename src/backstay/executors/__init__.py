"""Executors: where a batch's tasks are driven when not in the engine's own process.

* ``RayExecutor`` (``RaySettings``): each run a Ray task on a cluster, a local one started
  for the batch or an existing one (the ``ray`` extra: ``pip install 'backstay[ray]'``);
* ``WorkerLost``: the event of a run whose worker died; ``ClusterLost``: the cluster did.

Ray itself is imported only when a batch is placed on it. See ``docs/scale-out.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from backstay._lazy_names import listed_names, load_name

if TYPE_CHECKING:
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

# Where each name lives, imported on first use: importing a module of this package
# (``events``, ``ray_settings`` …) loads only what that module needs.
_LAZY: Final = {
    "ClusterLost": "backstay.executors.ray_executor",
    "Executor": "backstay.engine.executor",
    "RAY_EXTRA_HINT": "backstay.executors._ray_cluster",
    "RayExecutor": "backstay.executors.ray_executor",
    "RaySettings": "backstay.executors.ray_settings",
    "WorkerLost": "backstay.executors.events",
}


def __getattr__(name: str) -> Any:
    return load_name(globals(), name, _LAZY)


def __dir__() -> list[str]:
    return listed_names(globals())
