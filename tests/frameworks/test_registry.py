"""``framework_adapter``: a framework by name, its extra named when it is missing."""

from __future__ import annotations

import sys

import pytest

from backstay.errors import ConfigError
from backstay.frameworks import FRAMEWORKS, framework_adapter
from backstay.frameworks._common import require


def test_an_unknown_framework_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="known: autogen, langgraph, llamaindex, pydantic-ai"):
        framework_adapter("crewai")


def test_a_missing_framework_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langgraph", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "backstay.frameworks.langgraph", raising=False)
    with pytest.raises(ConfigError, match=r"pip install 'backstay\[langgraph\]'"):
        framework_adapter("langgraph", {"api_key": "k"})


def test_require_names_the_package_and_the_extra() -> None:
    with pytest.raises(ConfigError, match=r"'no_such_pkg'.*backstay\[extra\]"):
        require("no_such_pkg.sub", "extra")


@pytest.mark.parametrize("name", sorted(FRAMEWORKS))
def test_each_framework_is_built_by_name(name: str) -> None:
    adapter = framework_adapter(name, {"api_key": "k", "base_url": "http://127.0.0.1:9/v1"})
    assert adapter.name == name
