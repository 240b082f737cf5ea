"""Operation ids are remembered for the tasks in flight; the checks still run for bad parts."""

from __future__ import annotations

from typing import Any

import pytest

from backstay.errors import ConfigError
from backstay.idempotency import ids
from backstay.idempotency.ids import operation_id


def test_a_repeated_operation_id_is_joined_once() -> None:
    ids._joined.cache_clear()
    first = operation_id("wf-cache", "task", "run_01")
    second = operation_id("wf-cache", "task", "run_01")
    assert first == second == "wf-cache:task:run_01"
    info = ids._joined.cache_info()
    assert (info.hits, info.misses) == (1, 1)


@pytest.mark.parametrize(
    ("parts", "where"),
    [
        (("wf", "a:b", "run_01"), "task_id"),
        (("", "task", "run_01"), "workflow_id"),
        (("wf", "task", "run\n01"), "task_run_id"),
        ((7, "task", "run_01"), "workflow_id"),
        (("wf", ["task"], "run_01"), "task_id"),
    ],
)
def test_a_bad_part_is_refused_every_time(parts: tuple[Any, ...], where: str) -> None:
    for _ in range(2):  # an error is not remembered
        with pytest.raises(ConfigError) as caught:
            operation_id(*parts)
        assert caught.value.where == where


def test_a_str_subclass_is_checked_without_the_cache() -> None:
    class Part(str):
        __slots__ = ()

    ids._joined.cache_clear()
    assert operation_id(Part("wf"), "task", "run_01") == "wf:task:run_01"
    assert ids._joined.cache_info().misses == 0
