"""The package's public names: sorted as ruff keeps them, and all importable."""

from __future__ import annotations

import backstay.store as package


def _key(name: str) -> tuple[int, str]:
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def test_all_is_sorted_and_every_name_exists() -> None:
    assert list(package.__all__) == sorted(package.__all__, key=_key)
    assert [n for n in package.__all__ if not hasattr(package, n)] == []
