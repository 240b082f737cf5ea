"""The garbage collector while a provider's SDK is imported.

Importing an SDK makes a few hundred thousand objects that live until the process ends
(``anthropic``'s modules, its pydantic models and their schemas). With the collector
running, every collection made while they are being made scans the ones made before
again: about 0.15 s of CPU in the collections of one ``backstay run`` of
``anthropic-api``, whose own collections (``cli._batch_gc``) are fewer already.

A program that keeps what lives for its whole run out of the collector's way
(``gc.freeze``) can have the SDK's objects kept out of it too: within ``freezing()``,
``imported`` imports a module not imported yet with the collector paused, then freezes
what is alive (the SDK's objects among them) and lets the collector go on. ``backstay
run``, ``batch`` and ``resume`` import so (``cli._batch_gc.collector_for_batch``, which
unfreezes everything when it ends). An import cannot make garbage the collector would have
to find later, except cycles it dropped (about 1,900 small objects for ``anthropic``),
which stay frozen until then. Outside ``freezing()`` (a program using the library) an
import is a plain import.
"""

from __future__ import annotations

import gc
import importlib
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

__all__ = ["freezing", "imported"]

_DEPTH = [0]  # how many ``freezing()`` blocks are in force
_LOCK = threading.Lock()  # one paused import at a time: the collector is the process's


@contextmanager
def freezing() -> Iterator[None]:
    """Within the block, ``imported`` freezes what an import leaves alive."""
    with _LOCK:
        _DEPTH[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH[0] -= 1


def imported(module: str) -> ModuleType:
    """``importlib.import_module(module)``; within ``freezing()``, a first import with the
    collector paused and what is alive frozen after it (also when it fails)."""
    if not _DEPTH[0] or module in sys.modules:
        return importlib.import_module(module)
    with _LOCK:
        paused = gc.isenabled()
        gc.disable()
        try:
            return importlib.import_module(module)
        finally:
            gc.freeze()
            if paused:
                gc.enable()
