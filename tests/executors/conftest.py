"""One real Ray head node on 127.0.0.1 per test session (per xdist worker): starting Ray
costs seconds on a 2-core machine, so the executor tests share it; it is stopped by the
PIDs of its processes, and the session fails if one is left."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.executors.ray_support import RayCluster, ray_cluster


@pytest.fixture(scope="session")
def ray_head() -> Iterator[RayCluster]:
    with ray_cluster() as cluster:
        yield cluster
