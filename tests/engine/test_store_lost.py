"""The shared store stops answering under a running batch: ``Engine.run`` raises the
store's ``StoreUnreachable`` (the command line's exit 6), and asyncio reports nothing
afterwards — no task of a driver left with its failure "never retrieved".

The spend ledger is the real SQLite one behind a wrapper that answers ``StoreUnreachable``
from ``reserve`` once a few reservations went through: the drivers then fail a few loop
turns apart while the others are still stopping, as when redis-server is killed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
from pathlib import Path
from typing import Any

import pytest
from tests.engine.support import ScriptedAdapter, spec

from backstay.engine import Engine
from backstay.engine.spend_ledger import SpendLedger
from backstay.store.location import StoreLocation, StoreUnreachable
from backstay.store.open import open_stores


class _Dying:
    """A spend ledger whose store stops answering after ``answers`` reservations."""

    def __init__(self, inner: SpendLedger, answers: int) -> None:
        self._inner = inner
        self._left = answers

    def reserve(self, attempt: Any, *, at: Any) -> Any:
        if self._left <= 0:
            raise StoreUnreachable("redis://127.0.0.1:6390/0", "Connection refused")
        self._left -= 1
        return self._inner.reserve(attempt, at=at)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.mark.parametrize("answers", [3, 4, 5, 6])
def test_a_store_lost_under_running_drivers_leaves_no_failure_never_retrieved(
    tmp_path: Path, answers: int
) -> None:
    reported: list[dict[str, Any]] = []
    bundle = open_stores(StoreLocation.sqlite(tmp_path), state_dir=tmp_path)
    bundle = dataclasses.replace(bundle, spend=_Dying(bundle.spend, answers))
    adapter = ScriptedAdapter(hold_s=0.01)
    specs = [spec(tmp_path, f"t{i}") for i in range(8)]
    with Engine(tmp_path, adapters={"fake": adapter}, stores=bundle, concurrency=4, env={}) as eng:

        async def scenario() -> None:
            asyncio.get_running_loop().set_exception_handler(
                lambda _, context: reported.append(context)
            )
            with pytest.raises(StoreUnreachable):
                await eng.run(specs)
            gc.collect()

        asyncio.run(scenario())
        gc.collect()
    assert [c.get("message") for c in reported] == []
