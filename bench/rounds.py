"""Interleaved rounds: how the retry benchmarks (``retry.py``, ``async_retry.py``) time their
statements on a shared machine whose speed moves with its neighbours.

Every statement of one comparison is timed once per round, ``ROUNDS`` rounds in a row, so a
slow stretch of the machine lands on every contender alike instead of on whichever one
happened to be measured during it. Each round starts one statement further along the list,
so no statement is always timed first or always right after the same other one.

The figure kept per statement is its **minimum over the rounds**, in µs per execution. As
the ``timeit`` documentation puts it, the lower values give the cost of the code and the
higher ones are other processes interfering with the timing: a mean or median of such a
machine's runs measures the neighbours as much as the code. A cost per retry is then a
difference of two minima taken in the same rounds.

Each sample is timed in this thread's CPU time (``time.thread_time``): a sample that loses
the CPU to another process does not count that process's time. Wall time
(``time.perf_counter``) under this same method gave figures no steadier from run to run, and
counts whatever else the machine runs, so the CPU clock stays. A sample runs with the
garbage collector off, as ``timeit`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import time
import timeit
from collections.abc import Callable, Hashable, Mapping
from contextlib import AbstractContextManager
from typing import Any, TypeVar

ROUNDS = 20
TIMER: Callable[[], float] = time.thread_time

K = TypeVar("K", bound=Hashable)
# Seconds taken by ``number`` executions of one statement.
Sample = Callable[[int], float]
Around = Callable[[], AbstractContextManager[None]]


def sync_sample(stmt: str, env: dict[str, Any], around: Around = contextlib.nullcontext) -> Sample:
    """A sample of ``stmt`` run with ``env`` as its globals; ``around`` is entered outside
    the timed loop (a patch the statement needs, say)."""
    timer = timeit.Timer(stmt, globals=env, timer=TIMER)

    def sample(number: int) -> float:
        with around():
            return timer.timeit(number)

    return sample


def async_sample(
    runner: asyncio.Runner, expr: str, env: dict[str, Any], around: Around = contextlib.nullcontext
) -> Sample:
    """A sample of ``await expr`` in a loop, run to completion by ``runner``; ``around`` is
    entered outside the timed loop."""
    namespace = dict(env)
    source = f"async def _bench(n):\n    for _ in range(n):\n        await {expr}\n"
    exec(source, namespace)  # noqa: S102 - a fixed template over our own expressions
    bench = namespace["_bench"]
    timer = TIMER

    def sample(number: int) -> float:
        with around():
            gc_was_on = gc.isenabled()
            gc.disable()
            try:
                start = timer()
                runner.run(bench(number))
                return timer() - start
            finally:
                if gc_was_on:
                    gc.enable()

    return sample


def min_us(samples: Mapping[K, tuple[Sample, int]], rounds: int = ROUNDS) -> dict[K, float]:
    """Per statement, the least µs per execution over ``rounds`` interleaved rounds; a round
    runs every sample once, with its own number of executions."""
    order = list(samples)
    best = dict.fromkeys(order, math.inf)
    for r in range(rounds):
        start = r % len(order)
        for key in order[start:] + order[:start]:
            sample, number = samples[key]
            best[key] = min(best[key], sample(number) / number)
    return {key: best[key] * 1e6 for key in order}
