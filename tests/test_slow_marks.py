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
    name, _, param = test_name.partition("[")
    assert callable(getattr(cls, name, None)), f"{nodeid} names no test"
    if param:
        # A parametrised case: the parameter must be one the test is given.
        ids = {str(p) for mark in getattr(cls, name).pytestmark for p in mark.args[1]}
        assert param.removesuffix("]") in ids, f"{nodeid} names no case of {name}"
