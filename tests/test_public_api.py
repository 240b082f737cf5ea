"""The public API is what the snapshot says: a change to it shows up in review."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

SNAPSHOT = Path(__file__).with_name("public_api.txt")
MODULES = (
    "backstay",
    "backstay.adapters",
    "backstay.adapters.pricing",
    "backstay.agents",
    "backstay.classify",
    "backstay.clock",
    "backstay.config",
    "backstay.demo",
    "backstay.breaker",
    "backstay.call",
    "backstay.engine",
    "backstay.errors",
    "backstay.events",
    "backstay.executors",
    "backstay.failure",
    "backstay.fallback",
    "backstay.fakeprovider",
    "backstay.frameworks",
    "backstay.gateway",
    "backstay.idempotency",
    "backstay.integrations",
    "backstay.observe",
    "backstay.outcome",
    "backstay.policy",
    "backstay.redact",
    "backstay.runtime",
    "backstay.store",
    "backstay.taxonomy",
    "backstay.testing",
    "backstay.testing.contract",
    "backstay.testing.framework_contract",
    "backstay.testing.netns",
)


def _isort_key(name: str) -> tuple[int, str]:
    """CONSTANTS, then Classes, then functions: the order ruff keeps ``__all__`` in."""
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def _render() -> str:
    lines = []
    for name in MODULES:
        module = importlib.import_module(name)
        lines.append(f"[{name}]")
        lines.extend(module.__all__)
        lines.append("")
    return "\n".join(lines)


def test_public_api_matches_the_snapshot() -> None:
    assert _render() == SNAPSHOT.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_every_name_exists(name: str) -> None:
    module = importlib.import_module(name)
    assert list(module.__all__) == sorted(module.__all__, key=_isort_key)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == []
