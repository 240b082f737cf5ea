"""The garbage collector while a batch runs: out of the way of what lives for the batch.

A batch allocates many short-lived objects per task (events, records, the SDK's
responses) on top of a large set that lives as long as the process (the imported
modules, the suite, its specs, the engine). With the collector's defaults, the full
collections that follow every 70,000 or so allocations re-scan that whole set again and
again: 0.8–1 s of CPU over a 1,000-task batch. ``collector_for_batch`` moves everything
alive when the batch starts into the collector's permanent generation (``gc.freeze``),
which it never scans, and raises the youngest generation's threshold so that collections
are fewer; both are put back when the batch ends. ``backstay batch`` and ``backstay
resume`` run their tasks under it, and ``backstay run`` its one run (whose configuration
and SDK modules, like a batch's, live until the process ends: about 0.15–0.2 s less of
collections in a run of ``anthropic-api``). A provider's SDK imported meanwhile (in the
first attempt) is imported with the collector paused and its objects frozen as well
(``adapters.api._sdk_gc``: about 0.1 s less again). Nothing is freed later than it would
be by reference counting, which frees all but cyclic garbage at once; a cycle made
during the batch is still collected, only in fewer, larger passes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

__all__ = ["BATCH_GEN0_THRESHOLD", "collector_for_batch"]

BATCH_GEN0_THRESHOLD: Final = 20_000
"""Allocations (less deallocations) between two collections of the youngest generation
during a batch; Python's default is 700."""


@contextmanager
def collector_for_batch() -> Iterator[None]:
    """Freeze what is alive and raise the youngest generation's threshold, for the block."""
    from backstay.adapters.api._sdk_gc import freezing  # noqa: PLC0415 - the run's own

    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(before[0], BATCH_GEN0_THRESHOLD), *before[1:])
    try:
        with freezing():  # an SDK imported meanwhile: its objects frozen too
            yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
