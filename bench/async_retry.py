"""Retry-framework benchmarks, async side: success path and cost per retry of backstay's
``acall`` / ``@retry`` against tenacity, stamina and backoff, and 10,000 concurrent calls
that each fail once and are retried after a 1 ms backoff, all in one event loop.

The peers are configured as in ``retry.py`` (3 attempts, retry on ``ConnectionError``, no
logging hooks); see its docstring for what "sleep excluded" means. Timed as there
(``rounds.py``): every contender's succeeding and failing await once per round, in
interleaved rounds, in this thread's CPU time (``time.thread_time``), each await's figure
the minimum over the rounds and a cost per retry (failing - succeeding) / 2 of those minima.
Each round's sample runs its loop to completion on one ``asyncio.Runner``, gc off.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

import backoff
import stamina
import tenacity

import backstay
import rounds
from retry import (
    ATTEMPTS,
    HELD_OUT,
    HELD_OUT_PEER,
    HELD_OUT_POLICY,
    POLICY,
    SUCCESS_TARGET_US,
    Row,
    backoff_retry,
    no_sleep,
    print_table,
    quiet_stamina,
    ratio,
    record,
    retry_section,
    stamina_retry,
    success_section,
    tenacity_retry,
)

# backstay allows async a little more than sync on the success path (1 µs is printed too).
ASYNC_SUCCESS_TARGET_US = 1.5
FANOUT = 10_000
FANOUT_DELAY_S = 0.001
FANOUT_REPEAT = 5


async def aok() -> int:
    return 1


class AFlaky:
    """Fails with ``ConnectionError`` on attempts 1 and 2 of every 3, succeeds on the 3rd."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self) -> int:
        self.calls += 1
        if self.calls % ATTEMPTS:
            raise ConnectionError("[Errno 104] Connection reset by peer")
        return 1


async def ahand_loop(fn: Callable[[], Awaitable[Any]]) -> Any:
    """The floor: a hand-written async loop, no policy, classification or events."""
    for attempt in range(ATTEMPTS):
        try:
            return await fn()
        except ConnectionError:
            if attempt == ATTEMPTS - 1:
                raise
    return None


def _as_coroutine_function(fn: Callable[[], Awaitable[int]]) -> Callable[[], Awaitable[int]]:
    """Decorators check ``iscoroutinefunction``: hand them a real ``async def``."""

    async def target() -> int:
        return await fn()

    return target


def _async_candidates(fn: Callable[[], Awaitable[int]]) -> dict[str, tuple[str, dict[str, Any]]]:
    target = fn if inspect.iscoroutinefunction(fn) else _as_coroutine_function(fn)
    wrapped = {
        "bare await": ("fn()", {}),
        "hand-written loop (floor)": ("loop(fn)", {"loop": ahand_loop}),
        "backstay @retry": ("w()", {"w": backstay.retry(policy=POLICY)(target)}),
        "await backstay.acall(fn, policy=…)": (
            "acall(fn, policy=p)",
            {"acall": backstay.acall, "p": POLICY},
        ),
        "await " + HELD_OUT.replace("call", "acall", 1): (
            "acall(fn, policy=p)",
            {"acall": backstay.acall, "p": HELD_OUT_POLICY},
        ),
        "tenacity @retry": ("w()", {"w": tenacity_retry()(target)}),
        "await " + HELD_OUT_PEER.replace("Retrying", "AsyncRetrying"): (
            "r(fn)",
            {"r": tenacity.AsyncRetrying(stop=tenacity.stop_after_attempt(3))},
        ),
        "stamina @retry": ("w()", {"w": stamina_retry()(target)}),
        "backoff @on_exception": ("w()", {"w": backoff_retry()(target)}),
    }
    return {name: (stmt, {"fn": target, **env}) for name, (stmt, env) in wrapped.items()}


def async_timings(runner: asyncio.Runner) -> tuple[dict[str, float], dict[str, float]]:
    """Every contender's succeeding and failing await (µs), timed in the same interleaved
    rounds; the failing ones with the sleeps patched out."""
    samples: dict[tuple[str, str], tuple[rounds.Sample, int]] = {}
    for name, (expr, env) in _async_candidates(aok).items():
        number = 10_000 if name.startswith(("bare", "hand", "backstay", "await")) else 2_000
        samples["success", name] = (rounds.async_sample(runner, expr, env), number)
    flaky = AFlaky()
    for name, (expr, env) in _async_candidates(flaky).items():
        if name == "bare await":
            continue
        with no_sleep():
            before = flaky.calls
            namespace = dict(env)
            exec(f"async def _once():\n    return await {expr}\n", namespace)  # noqa: S102
            assert runner.run(namespace["_once"]()) == 1, name
            assert flaky.calls - before == ATTEMPTS, f"{name}: {flaky.calls - before} attempts"
        number = 2_000 if name.startswith("hand") else 500
        samples["failing", name] = (rounds.async_sample(runner, expr, env, no_sleep), number)
    us = rounds.min_us(samples)
    success = {name: v for (form, name), v in us.items() if form == "success"}
    failing = {name: v for (form, name), v in us.items() if form == "failing"}
    return success, failing


# -- 10,000 concurrent calls ---------------------------------------------------------------


FANOUT_POLICY = backstay.RetryPolicy(
    name="fanout",
    max_attempts=ATTEMPTS,
    initial_delay_s=FANOUT_DELAY_S,
    max_delay_s=FANOUT_DELAY_S,
    jitter_mode="none",
)


def _fanout_wrappers() -> dict[str, Callable[[Callable[[int], Awaitable[int]]], Any]]:
    """Each contender's way to call ``fn(i)`` with up to 3 attempts and a 1 ms wait."""

    def via_acall(fn: Callable[[int], Awaitable[int]]) -> Any:
        return lambda i: backstay.acall(fn, i, policy=FANOUT_POLICY)

    return {
        "await backstay.acall(fn, i, policy=…)": via_acall,
        "backstay @retry": backstay.retry(policy=FANOUT_POLICY),
        "tenacity @retry (wait_fixed 1 ms)": tenacity.retry(
            stop=tenacity.stop_after_attempt(ATTEMPTS),
            wait=tenacity.wait_fixed(FANOUT_DELAY_S),
            retry=tenacity.retry_if_exception_type(ConnectionError),
            reraise=True,
        ),
        "stamina @retry (wait 1 ms, no jitter)": stamina.retry(
            on=ConnectionError,
            attempts=ATTEMPTS,
            timeout=None,
            wait_initial=FANOUT_DELAY_S,
            wait_max=FANOUT_DELAY_S,
            wait_jitter=0,
        ),
        "backoff @on_exception (constant 1 ms)": backoff.on_exception(
            backoff.constant,
            ConnectionError,
            max_tries=ATTEMPTS,
            interval=FANOUT_DELAY_S,
            jitter=None,
            logger=None,
        ),
    }


async def _fanout_once(wrap: Callable[[Callable[[int], Awaitable[int]]], Any]) -> float:
    """Seconds for ``FANOUT`` concurrent calls, each failing once; checks every result."""
    calls = [0] * FANOUT

    async def flaky(i: int) -> int:
        calls[i] += 1
        if calls[i] == 1:
            raise ConnectionError("[Errno 104] Connection reset by peer")
        return i

    run = wrap(flaky)
    start = time.perf_counter()
    results = await asyncio.gather(*(run(i) for i in range(FANOUT)))
    elapsed = time.perf_counter() - start
    assert results == list(range(FANOUT)), "a concurrent call returned a wrong result"
    assert all(n == 2 for n in calls), "a concurrent call was not attempted exactly twice"
    return elapsed


def fanout_section(runner: asyncio.Runner) -> None:
    rows: list[Row] = []
    times: dict[str, float] = {}
    wrappers = _fanout_wrappers()
    runs: dict[str, list[float]] = {name: [] for name in wrappers}
    for _ in range(FANOUT_REPEAT):  # interleaved rounds, as ``rounds`` does; the least kept
        for name, wrap in wrappers.items():
            runs[name].append(runner.run(_fanout_once(wrap)))
    for name, taken in runs.items():
        times[name] = min(taken) * 1e3
    ours = times["await backstay.acall(fn, i, policy=…)"]
    peers = {k: v for k, v in times.items() if not k.startswith(("await backstay", "backstay"))}
    for form in ("await backstay.acall(fn, i, policy=…)", "backstay @retry"):
        record(
            f"{FANOUT:,} concurrent retrying calls faster than every peer: {form}",
            f"{times[form]:.0f} ms",
            "   ".join(f"{k.split()[0]} {v:.0f} ms" for k, v in peers.items()),
            all(times[form] < v for v in peers.values()),
        )
    for name, ms in times.items():
        per_call = ms * 1e3 / FANOUT
        note = f"{per_call:6.1f} µs/call, all {FANOUT:,} correct"
        if not name.startswith(("await backstay", "backstay")):
            note += f"   acall/this {ratio(ours, ms)}"
        rows.append(Row(name, ms, unit="ms", note=note))
    print_table(
        f"{FANOUT:,} concurrent calls, each fails once, retried after "
        f"{FANOUT_DELAY_S * 1e3:g} ms (one event loop, least of {FANOUT_REPEAT} interleaved "
        "rounds, wall ms)",
        rows,
    )


def report() -> None:
    """Print the async success, retry and fan-out tables."""
    quiet_stamina()
    print(
        f"\n== Retry frameworks, async (least of {rounds.ROUNDS} interleaved rounds, "
        "CPU µs per await, one event loop) =="
    )
    with asyncio.Runner() as runner:
        success, failing = async_timings(runner)
        success_section("Success path, async", success, SUCCESS_TARGET_US, ASYNC_SUCCESS_TARGET_US)
        retry_section(
            f"Fails twice then succeeds, async (sleep excluded; per retry = (call - success) "
            f"/ {ATTEMPTS - 1})",
            success,
            failing,
        )
        fanout_section(runner)
