"""``RaySettings``: validated on construction, and the local cluster's CPUs."""

from __future__ import annotations

import pytest

from backstay.errors import ConfigError
from backstay.executors import RaySettings
from backstay.executors.ray_settings import LOCAL_CPUS_CAP


def test_the_local_cluster_has_room_for_the_batchs_concurrency() -> None:
    assert RaySettings().local_cpus(4) == 4
    assert RaySettings(task_cpus=0.5).local_cpus(5) == 3


def test_the_local_cluster_is_bounded_whatever_the_concurrency() -> None:
    assert RaySettings().local_cpus(10_000) == LOCAL_CPUS_CAP


def test_num_cpus_given_wins_over_the_concurrency() -> None:
    assert RaySettings(num_cpus=2).local_cpus(8) == 2


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("num_cpus", 0),
        ("num_cpus", LOCAL_CPUS_CAP + 1),
        ("task_cpus", 0.0),
        ("max_worker_losses", 0),
        ("address", ""),
    ],
)
def test_a_bad_setting_is_a_config_error_naming_it(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"ray.{field}"):
        RaySettings(**{field: value})  # type: ignore[arg-type]
