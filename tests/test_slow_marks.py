"""The list of real-CLI checks ``make test`` leaves out names tests that exist: a renamed
test must not silently come back into the quick run, nor a typo leave one in."""

from __future__ import annotations

import importlib

import pytest
from tests.conftest import SLOW_REAL_CLI_CHECKS


@pytest.mark.parametrize("nodeid", sorted(SLOW_REAL_CLI_CHECKS))
def test_every_check_marked_slow_by_name_exists(nodeid: str) -> None:
    path, cls_name, test_name = nodeid.split("::")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    cls = getattr(module, cls_name)
    assert callable(getattr(cls, test_name, None)), f"{nodeid} names no test"
