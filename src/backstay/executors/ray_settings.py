"""``RaySettings``: which Ray cluster a batch is placed on, and how.

Frozen and validated on construction: a bad value raises ``ConfigError`` naming the field
(``where="ray.<field>"``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Final

from backstay._checks import check_name, check_number

__all__ = [
    "DEFAULT_MAX_WORKER_LOSSES",
    "DEFAULT_TASK_CPUS",
    "LOCAL_CPUS_CAP",
    "LOCAL_OBJECT_STORE_BYTES",
    "RaySettings",
]

# Each run is one Ray task asking this many CPUs of the cluster (agent runs mostly wait).
DEFAULT_TASK_CPUS: Final = 1.0
# A task whose worker died this many times in one batch is left for `backstay resume`,
# rather than placed again and again (a run that kills its worker every time).
DEFAULT_MAX_WORKER_LOSSES: Final = 3
# The local cluster started for a batch has room for its concurrency of runs, at most this.
LOCAL_CPUS_CAP: Final = 64
# Runs pass only small reports through Ray's object store: 100 MB instead of 30 % of RAM.
LOCAL_OBJECT_STORE_BYTES: Final = 100 * 1024 * 1024


def _where(field: str) -> str:
    return f"ray.{field}"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RaySettings:
    """Where and how the ``RayExecutor`` places a batch's runs.

    * ``address``: an existing cluster (``"10.0.0.5:6380"``, ``"ray://…"``, ``"auto"``);
      ``None``: a local cluster is started for the batch, on 127.0.0.1 only, and shut
      down after it.
    * ``num_cpus``: the local cluster's CPUs (default: room for the batch's concurrency of
      runs, at most ``LOCAL_CPUS_CAP``); ignored with an ``address``.
    * ``task_cpus``: the CPUs each run asks of the cluster (Ray places a run only where
      they are free; fractions allowed).
    * ``max_worker_losses``: how many times one task is placed again after its worker
      died, within one batch, before it is left for ``backstay resume``.
    """

    address: str | None = None
    num_cpus: int | None = None
    task_cpus: float = DEFAULT_TASK_CPUS
    max_worker_losses: int = DEFAULT_MAX_WORKER_LOSSES

    def __post_init__(self) -> None:
        if self.address is not None:
            check_name(self.address, where=_where("address"))
        if self.num_cpus is not None:
            check_number(
                self.num_cpus,
                where=_where("num_cpus"),
                minimum=1,
                maximum=LOCAL_CPUS_CAP,
                integer=True,
            )
        check_number(self.task_cpus, where=_where("task_cpus"), above=True)
        check_number(
            self.max_worker_losses, where=_where("max_worker_losses"), minimum=1, integer=True
        )

    def local_cpus(self, concurrency: int) -> int:
        """The CPUs of the local cluster for a batch of ``concurrency``: room for that
        many runs of ``task_cpus`` each, unless ``num_cpus`` says otherwise."""
        if self.num_cpus is not None:
            return self.num_cpus
        return max(1, min(math.ceil(concurrency * self.task_cpus), LOCAL_CPUS_CAP))
