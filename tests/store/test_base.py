"""Arguments every store checks before it starts a transaction."""

from __future__ import annotations

import pytest

from backstay.errors import ConfigError
from backstay.idempotency._store_base import DEFAULT_RESULT_TTL_S, StoreBase
from backstay.idempotency.memory import MemoryOperationStore


def test_results_are_kept_a_day_by_default() -> None:
    assert DEFAULT_RESULT_TTL_S == 86_400.0
    assert MemoryOperationStore().result_ttl_s == DEFAULT_RESULT_TTL_S


@pytest.mark.parametrize("ttl", [0, -1.0, float("nan"), "1"], ids=repr)
def test_a_result_ttl_that_is_not_positive_is_refused(ttl: object) -> None:
    with pytest.raises(ConfigError) as info:
        MemoryOperationStore(result_ttl_s=ttl)  # type: ignore[arg-type]
    assert info.value.where == "result_ttl_s"


@pytest.mark.parametrize(
    ("operation_id", "owner", "ttl_s", "where"),
    [
        ("", "w1", 1.0, "operation_id"),
        ("op", "", 1.0, "owner"),
        ("op", "w1", 0.0, "ttl_s"),
        ("op", "w1", float("inf"), "ttl_s"),
    ],
)
def test_a_claim_with_a_bad_argument_names_it(
    store: StoreBase, operation_id: str, owner: str, ttl_s: float, where: str
) -> None:
    with pytest.raises(ConfigError) as info:
        store.claim(operation_id, owner, ttl_s)
    assert info.value.where == where
