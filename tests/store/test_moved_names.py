"""The names the store wing moved still import from their old homes, for one release."""

from __future__ import annotations

import importlib

import pytest

import backstay.store
from backstay import idempotency

MOVED = [
    ("backstay.engine", "SQLiteTaskStore", backstay.store),
    ("backstay.engine", "SQLiteSpendLedger", backstay.store),
    ("backstay.engine", "SQLiteCircuitLog", backstay.store),
    ("backstay.engine", "STATE_FILE", backstay.store),
    ("backstay.breaker", "SQLiteBreakerStore", backstay.store),
    ("backstay.fallback", "SQLiteFallbackStore", backstay.store),
    ("backstay", "SQLiteBreakerStore", backstay.store),
    *(
        ("backstay.store", name, idempotency)
        for name in (
            "DEFAULT_RESULT_TTL_S",
            "Acquired",
            "Busy",
            "CachedResult",
            "Claim",
            "Done",
            "Lease",
            "MemoryOperationStore",
            "OperationRecord",
            "OperationState",
            "OperationStore",
        )
    ),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED, ids=lambda v: getattr(v, "__name__", v))
def test_a_moved_name_is_the_same_object_at_its_old_path(old: str, name: str, new: object) -> None:
    assert getattr(importlib.import_module(old), name) is getattr(new, name)


@pytest.mark.parametrize("old", ["backstay.engine", "backstay.breaker", "backstay.fallback"])
def test_an_unknown_name_is_still_an_attribute_error(old: str) -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = importlib.import_module(old).Nope
