"""The collector while a batch runs: what lives is frozen, collections are fewer, and both
are put back afterwards."""

from __future__ import annotations

import gc
import weakref

import pytest

from backstay.cli._batch_gc import BATCH_GEN0_THRESHOLD, collector_for_batch


def test_a_batch_freezes_what_lives_and_raises_the_youngest_threshold() -> None:
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    alive = [object() for _ in range(10)]
    with collector_for_batch():
        assert gc.get_freeze_count() > frozen_before
        assert gc.get_threshold() == (max(before[0], BATCH_GEN0_THRESHOLD), *before[1:])
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert len(alive) == 10


def test_the_settings_are_put_back_when_the_batch_raises() -> None:
    before = gc.get_threshold()
    with pytest.raises(KeyboardInterrupt), collector_for_batch():
        raise KeyboardInterrupt
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_cycle_made_during_the_batch_is_still_collected() -> None:
    class Node:
        def __init__(self) -> None:
            self.other: Node | None = None

    with collector_for_batch():
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        assert gone() is not None  # a cycle: reference counting alone keeps it
        gc.collect()
        assert gone() is None
