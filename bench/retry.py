"""Retry-framework benchmarks, sync side: backstay's drivers against tenacity, stamina and
backoff in the same process, plus policy memory and policy lookup.

Every library is configured alike: at most 3 attempts, retry on ``ConnectionError``, zero
waits. The peers run lean: backoff with ``logger=None`` and stamina with no on-retry hooks
(its default logging hook roughly doubles its cost per retry), so each ratio compares
backstay with the peer at its cheapest. backstay runs as shipped: its default
``LoggingSink`` stays attached (the logger at Python's default level, so nothing is written),
and a zero delay means no sleep call at all.

"Excluding sleep": with a zero wait the peers still call ``time.sleep(0)`` (or
``asyncio.sleep(0)``), a system call that costs far more than the retry machinery itself.
While the retry figures are measured the module-level sleeps are swapped for no-ops, so
those figures are the machinery alone; the cost of ``time.sleep(0)`` is printed beside them.

How it is timed (``rounds.py``): every statement of the sync tables (each contender's
succeeding and failing call, ``classify``, ``time.sleep(0)`` and the no-sinks pair) is timed
once per round, in interleaved rounds, in this thread's CPU time (``time.thread_time``); the
figure is each statement's minimum over the rounds, and a cost per retry is (the failing
call's minimum - the succeeding call's minimum) / 2. A slow stretch of the shared machine
thus falls on every contender alike, and the minimum leaves out the interference. Policy
lookup (and ``breaker.py``) keep ``median_us``: the median of ``REPEAT`` runs.

Ratios are backstay / peer: below 1 means backstay is cheaper.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import importlib.util
import statistics
import time
import timeit
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import backoff
import stamina
import stamina.instrumentation
import tenacity

import backstay
import rounds
from backstay.events import bus as sinks_module
from backstay.policy import STANDARD

REPEAT = 9  # runs per figure of median_us (policy lookup, breakers)
ATTEMPTS = 3
N_POLICIES = 1_000

# backstay's targets, printed beside each figure.
SUCCESS_TARGET_US = 1.0
SUCCESS_TARGET_RATIO = 0.1  # of tenacity
RETRY_TARGET_US = 3.0
CLASSIFY_TARGET_US = 1.0
LOOKUP_TARGET_US = 1.0
POLICY_TARGET_BYTES = 1024

POLICY = backstay.RetryPolicy(
    name="bench",
    max_attempts=ATTEMPTS,
    initial_delay_s=0.0,
    max_delay_s=0.0,
    jitter_mode="none",
)


class Row(NamedTuple):
    """One printed line: what was measured, its figure, and any comparison or target."""

    name: str
    value: float
    unit: str = "µs"
    note: str = ""


# -- measuring -----------------------------------------------------------------------------


def median_us(stmt: str, env: dict[str, Any], number: int) -> float:
    """Median of ``REPEAT`` timeit runs of ``stmt``, in µs per execution, timed in this
    thread's CPU time: on a shared machine a run that loses the CPU to another process
    would otherwise count the other process's time."""
    runs = timeit.repeat(stmt, globals=env, number=number, repeat=REPEAT, timer=time.thread_time)
    return statistics.median(runs) / number * 1e6


def _sleep_noop(_seconds: float) -> None:
    return None


async def _asleep_noop(_seconds: float, result: Any = None) -> Any:
    return result


@contextlib.contextmanager
def no_sleep() -> Iterator[None]:
    """``time.sleep`` and ``asyncio.sleep`` as no-ops (the peers look both up at call time)."""
    saved = time.sleep, asyncio.sleep
    time.sleep, asyncio.sleep = _sleep_noop, _asleep_noop  # type: ignore[assignment]
    try:
        yield
    finally:
        time.sleep, asyncio.sleep = saved  # type: ignore[assignment]


def verdict(value: float, limit: float, *, strict: bool = False) -> str:
    met = value < limit if strict else value <= limit
    return "met" if met else f"MISSED by {value / limit:.1f}x"


def ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:5.2f}x" if theirs > 0 else "    -"


def print_table(title: str, rows: list[Row]) -> None:
    print(f"\n{title}")
    width = max([46, *(len(row.name) for row in rows)])
    for row in rows:
        value = f"{row.value:10.2f} {row.unit}" if row.unit else f"{row.value:10.0f}"
        print(f"  {row.name:<{width}} {value:<13} {row.note}".rstrip())


# -- the peers, configured alike -----------------------------------------------------------


def quiet_stamina() -> None:
    """No on-retry hooks: stamina's default one logs a warning per retry."""
    stamina.instrumentation.set_on_retry_hooks([])


def tenacity_retry() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return tenacity.retry(
        stop=tenacity.stop_after_attempt(ATTEMPTS),
        wait=tenacity.wait_none(),
        retry=tenacity.retry_if_exception_type(ConnectionError),
        reraise=True,
    )


def stamina_retry() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return stamina.retry(
        on=ConnectionError,
        attempts=ATTEMPTS,
        timeout=None,
        wait_initial=0,
        wait_max=0,
        wait_jitter=0,
    )


def backoff_retry() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return backoff.on_exception(
        backoff.constant,
        ConnectionError,
        max_tries=ATTEMPTS,
        interval=0,
        jitter=None,
        logger=None,
    )


def hand_loop(fn: Callable[[], Any]) -> Any:
    """The floor: what a hand-written loop costs, with no policy, classification or events."""
    for attempt in range(ATTEMPTS):
        try:
            return fn()
        except ConnectionError:
            if attempt == ATTEMPTS - 1:
                raise
    return None


def ok() -> int:
    return 1


class Flaky:
    """Fails with ``ConnectionError`` on attempts 1 and 2 of every 3, succeeds on the 3rd."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        if self.calls % ATTEMPTS:
            raise ConnectionError("[Errno 104] Connection reset by peer")
        return 1


def check_three_attempts(run: Callable[[], object], flaky: Flaky, name: str) -> None:
    """Each setup really does fail twice and then succeed, before it is timed."""
    before = flaky.calls
    assert run() == 1, name
    assert flaky.calls - before == ATTEMPTS, f"{name}: {flaky.calls - before} attempts"


# -- sync: success path and cost per retry -------------------------------------------------


def _sync_candidates(fn: Callable[[], int]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Statement and globals per contender, each calling ``fn`` once under its retry."""
    wrapped = {
        "bare call": ("fn()", {}),
        "hand-written loop (floor)": ("loop(fn)", {"loop": hand_loop}),
        "backstay @retry": ("w()", {"w": backstay.retry(policy=POLICY)(fn)}),
        "backstay.call(fn, policy=…)": ("call(fn, policy=p)", {"call": backstay.call, "p": POLICY}),
        HELD_OUT: ("call(fn, policy=p)", {"call": backstay.call, "p": HELD_OUT_POLICY}),
        "tenacity @retry": ("w()", {"w": tenacity_retry()(fn)}),
        HELD_OUT_PEER: ("r(fn)", {"r": tenacity.Retrying(stop=tenacity.stop_after_attempt(3))}),
        "stamina @retry": ("w()", {"w": stamina_retry()(fn)}),
        "backoff @on_exception": ("w()", {"w": backoff_retry()(fn)}),
    }
    return {name: (stmt, {"fn": fn, **env}) for name, (stmt, env) in wrapped.items()}


# The pairing of issue 15: a policy object built with its defaults but for the attempts,
# against tenacity's own object with the matching stop.
HELD_OUT = "backstay.call(fn, policy=RetryPolicy(max_attempts=3))"
HELD_OUT_PEER = "tenacity.Retrying(stop=stop_after_attempt(3))(fn)"
HELD_OUT_POLICY = backstay.RetryPolicy(max_attempts=3)
PEERS = ("tenacity @retry", "stamina @retry", "backoff @on_exception")
# Each backstay form and the tenacity form its success overhead is held against.
TENACITY_FORM = {
    "backstay @retry": "tenacity @retry",
    "backstay.call(fn, policy=…)": "tenacity @retry",
    HELD_OUT: HELD_OUT_PEER,
    "await backstay.acall(fn, policy=…)": "tenacity @retry",
    "await " + HELD_OUT.replace("call", "acall", 1): "await "
    + HELD_OUT_PEER.replace("Retrying", "AsyncRetrying"),
}


class Target(NamedTuple):
    """One target of the issue, as measured in this run."""

    figure: str
    value: str
    peers: str
    met: bool


TARGETS: list[Target] = []


def record(figure: str, value: str, peers: str, met: bool) -> None:
    TARGETS.append(Target(figure, value, peers, met))


def print_targets() -> None:
    """Every target figure of this run, beside the peers, and whether it is met."""
    print("\n== Targets (issue 15), all from this run ==")
    for t in TARGETS:
        print(f"  {'met   ' if t.met else 'MISSED'} {t.figure:<58} {t.value:<26} {t.peers}")


class Timings(NamedTuple):
    """One side's figures (µs per call), all from the same interleaved rounds."""

    success: dict[str, float]
    failing: dict[str, float]
    context: dict[str, float]


def _split(us: dict[tuple[str, str], float]) -> Timings:
    forms = ("success", "failing", "context")
    return Timings(*({name: v for (f, name), v in us.items() if f == form} for form in forms))


def sync_timings() -> Timings:
    """Every contender's success and failing statement, and the rows of ``retry_context``,
    timed in the same interleaved rounds; the failing ones with the sleeps patched out."""
    samples: dict[tuple[str, str], tuple[rounds.Sample, int]] = {}
    for name, (stmt, env) in _sync_candidates(ok).items():
        number = 10_000 if name.startswith(("bare", "hand", "backstay")) else 2_000
        samples["success", name] = (rounds.sync_sample(stmt, env), number)
    for name, (stmt, env) in _sync_candidates(Flaky()).items():
        if name == "bare call":
            continue
        with no_sleep():
            check_three_attempts(lambda s=stmt, e=env: eval(s, e), env["fn"], name)  # noqa: S307
        number = 2_000 if name.startswith("hand") else 500
        samples["failing", name] = (rounds.sync_sample(stmt, env, no_sleep), number)
    samples.update(_context_samples())
    return _split(rounds.min_us(samples))


def _context_samples() -> dict[tuple[str, str], tuple[rounds.Sample, int]]:
    """``classify``, ``time.sleep(0)``, and backstay's decorator with every event sink
    removed (for its samples only), failing and succeeding."""
    flaky = Flaky()
    failing = backstay.retry(policy=POLICY)(flaky)
    with without_sinks():
        check_three_attempts(failing, flaky, "backstay @retry, no sinks")
    exc = ConnectionError("[Errno 104] Connection reset by peer")
    env = {"classify": backstay.classify, "e": exc, "sleep": time.sleep, "failing": failing}
    env["succeeding"] = backstay.retry(policy=POLICY)(ok)
    return {
        ("context", "classify"): (rounds.sync_sample("classify(e)", env), 1_000),
        ("context", "sleep(0)"): (rounds.sync_sample("sleep(0)", env), 1_000),
        ("context", "no sinks, failing"): (
            rounds.sync_sample("failing()", env, without_sinks),
            500,
        ),
        ("context", "no sinks, success"): (
            rounds.sync_sample("succeeding()", env, without_sinks),
            10_000,
        ),
    }


@contextlib.contextmanager
def without_sinks() -> Iterator[None]:
    """Every event sink removed, then put back."""
    sinks = tuple(sinks_module.BUS.sinks)
    for sink in sinks:
        sinks_module.remove_sink(sink)
    try:
        yield
    finally:
        for sink in sinks:
            sinks_module.add_sink(sink)


def _is_ours(name: str) -> bool:
    return name.startswith(("backstay", "await backstay"))


def success_section(title: str, us: dict[str, float], *targets_us: float) -> list[Row]:
    """Rows for a success-path table: each contender's µs and its overhead over the bare
    call; each backstay form's overhead against its tenacity form (target ≤ 0.1×) and
    against every µs target given."""
    bare = next(v for k, v in us.items() if k.startswith("bare"))
    over = {k: max(v - bare, 0.0) for k, v in us.items()}
    deco = over["backstay @retry"]
    rows = []
    for name, value in us.items():
        note = f"overhead {over[name]:6.2f} µs"
        if name in PEERS:
            note += f"   @retry/this {ratio(deco, over[name])}"
        elif _is_ours(name):
            note += "   " + "; ".join(f"≤ {t:g} µs: {verdict(value, t)}" for t in targets_us)
        rows.append(Row(name, value, note=note))
    kind = "async" if "async" in title else "sync"
    peers = "   ".join(f"{p.split()[0]} {over[p]:.2f}" for p in PEERS if p in over)
    for ours, theirs in TENACITY_FORM.items():
        if ours not in over or theirs not in over:
            continue
        share = over[ours] / over[theirs] if over[theirs] > 0 else 0.0
        target = f"target ≤ {SUCCESS_TARGET_RATIO:g}x: {verdict(share, SUCCESS_TARGET_RATIO)}"
        rows.append(Row(f"  overhead {ours} / {theirs}", share, unit="x", note=target))
        record(
            f"success {kind}: {ours}",
            f"{over[ours]:.2f} µs = {share:.3f}x",
            f"{theirs} {over[theirs]:.2f} µs; {peers}",
            share <= SUCCESS_TARGET_RATIO,
        )
    print_table(title, rows)
    return rows


def retry_section(title: str, success: dict[str, float], failing: dict[str, float]) -> float:
    """Rows per contender: µs for the whole 3-attempt call and µs per retry beyond success;
    returns backstay's (decorator form) µs per retry."""
    per_retry = {k: (v - success[k]) / (ATTEMPTS - 1) for k, v in failing.items()}
    deco = per_retry["backstay @retry"]
    rows = []
    for name, value in failing.items():
        each = per_retry[name]
        note = f"per retry {each:7.2f} µs"
        if name in PEERS:
            note += f"   backstay @retry/this {ratio(deco, each)}"
        elif _is_ours(name):
            note += f"   target ≤ {RETRY_TARGET_US:g} µs: {verdict(each, RETRY_TARGET_US)}"
        rows.append(Row(name, value, note=note))
    print_table(title, rows)
    kind = "async" if "async" in title else "sync"
    peers = "   ".join(
        f"{p.split()[0]} {per_retry[p]:.2f} ({ratio(deco, per_retry[p]).strip()})" for p in PEERS
    )
    for name in ("backstay @retry", next(k for k in per_retry if "call(fn, policy=…)" in k)):
        record(
            f"per retry {kind} ≤ {RETRY_TARGET_US:g} µs: {name}",
            f"{per_retry[name]:.2f} µs",
            peers,
            per_retry[name] <= RETRY_TARGET_US,
        )
    return deco


def retry_context(backstay_per_retry: float, context: dict[str, float]) -> None:
    """What backstay's per-retry figure contains, and what the peers' figures leave out."""
    classify_us = context["classify"]
    rest = backstay_per_retry - classify_us
    no_sinks = (context["no sinks, failing"] - context["no sinks, success"]) / (ATTEMPTS - 1)
    record(
        f"classify(ConnectionError) ≤ {CLASSIFY_TARGET_US:g} µs (fast path)",
        f"{classify_us:.2f} µs",
        "peers do not classify",
        classify_us <= CLASSIFY_TARGET_US,
    )
    target = f"target ≤ {RETRY_TARGET_US:g} µs: "
    rows = [
        Row("backstay @retry, per retry (from above)", backstay_per_retry),
        Row("  of which classify(ConnectionError)", classify_us),
        Row(
            "  the rest (policy, events, state)", rest, note=target + verdict(rest, RETRY_TARGET_US)
        ),
        Row(
            "backstay @retry, per retry, no sinks at all",
            no_sinks,
            note="default LoggingSink removed for this row only",
        ),
        Row(
            "time.sleep(0) (peers call it per zero wait)",
            context["sleep(0)"],
            note="excluded above; backstay makes no call",
        ),
    ]
    print_table("Where a sync retry's time goes (same run, µs)", rows)


# -- memory and lookup ---------------------------------------------------------------------


def _traced_bytes(build: Callable[[int], Any]) -> tuple[float, list[Any]]:
    """Bytes allocated per object for ``N_POLICIES`` objects kept alive (names prebuilt),
    and the objects."""
    keep: list[Any] = [None] * N_POLICIES
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(N_POLICIES):
            keep[i] = build(i)
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len({id(o) for o in keep}) == N_POLICIES
    return (after - before) / N_POLICIES, keep


def memory_section() -> list[backstay.RetryPolicy]:
    names = [f"policy-{i:04d}" for i in range(N_POLICIES)]

    def plain(i: int) -> backstay.RetryPolicy:
        return backstay.RetryPolicy(name=names[i])

    def zero_wait(i: int) -> backstay.RetryPolicy:
        return backstay.RetryPolicy(
            name=names[i],
            max_attempts=ATTEMPTS,
            initial_delay_s=0.0,
            max_delay_s=0.0,
            jitter_mode="none",
        )

    def derived(i: int) -> backstay.RetryPolicy:
        return STANDARD.derive(name=names[i])

    def tenacity_obj(_i: int) -> tenacity.Retrying:
        return tenacity.Retrying(
            stop=tenacity.stop_after_attempt(ATTEMPTS),
            wait=tenacity.wait_none(),
            retry=tenacity.retry_if_exception_type(ConnectionError),
            reraise=True,
        )

    target = f"target < {POLICY_TARGET_BYTES} B: "
    rows = []
    policies: list[backstay.RetryPolicy] = []
    for name, build in (
        ("RetryPolicy(name=…) (defaults)", plain),
        ("RetryPolicy(…, zero delays, no jitter)", zero_wait),
        ("STANDARD.derive(name=…) (per-kind table)", derived),
    ):
        size, built = _traced_bytes(build)
        policies = policies or built
        rows.append(
            Row(name, size, unit="", note=target + verdict(size, POLICY_TARGET_BYTES, strict=True))
        )
    size, _ = _traced_bytes(tenacity_obj)
    rows.append(Row("peer: tenacity.Retrying(stop, wait, retry)", size, unit="", note="peer"))
    print_table(f"Memory per policy (tracemalloc, {N_POLICIES:,} objects, bytes each)", rows)
    return policies


def lookup_section(policies: list[backstay.RetryPolicy]) -> None:
    call_module = importlib.import_module("backstay.call")
    target = f"target ≤ {LOOKUP_TARGET_US:g} µs: "
    rows = []
    resolve_label = "backstay.call.resolve_policy('standard', None)"
    if importlib.util.find_spec("backstay.policy.registry") is not None:
        registry_module = importlib.import_module("backstay.policy.registry")
        registry = registry_module.PolicyRegistry(policies)
        name = policies[len(policies) // 2].name
        assert registry.get(name) is policies[len(policies) // 2]
        us = median_us("get(name)", {"get": registry.get, "name": name}, 200_000)
        label = f"PolicyRegistry.get(name) ({len(registry):,} policies)"
        rows.append(Row(label, us, note=target + verdict(us, LOOKUP_TARGET_US)))
    else:
        resolve_label = "resolve_policy('standard', None) (no registry)"
    us = median_us("resolve('standard', None)", {"resolve": call_module.resolve_policy}, 200_000)
    rows.append(Row(resolve_label, us, note=target + verdict(us, LOOKUP_TARGET_US)))
    print_table(f"Policy lookup by name (median of {REPEAT}, µs)", rows)


# -- circuit breakers ----------------------------------------------------------------------


def breaker_rows() -> list[Row]:
    """Circuit-breaker comparisons (closed path vs pybreaker and purgatory): bench/breaker.py."""
    from breaker import breaker_rows as rows  # noqa: PLC0415 - breaker.py imports this module

    return rows()


# -- entry point ---------------------------------------------------------------------------


def report() -> None:
    """Print every sync retry table, then memory, lookup and the breaker hook."""
    quiet_stamina()
    print(
        f"\n== Retry frameworks, sync (least of {rounds.ROUNDS} interleaved rounds, "
        "CPU µs per call) =="
    )
    print(
        f"   {ATTEMPTS} attempts max, retry on ConnectionError, zero waits; "
        "peers lean (no logging hooks); ratios backstay / peer"
    )
    timings = sync_timings()
    success_section("Success path, sync", timings.success, SUCCESS_TARGET_US)
    per_retry = retry_section(
        f"Fails twice then succeeds, sync (sleep excluded; per retry = (call - success) / "
        f"{ATTEMPTS - 1})",
        timings.success,
        timings.failing,
    )
    retry_context(per_retry, timings.context)
    policies = memory_section()
    lookup_section(policies)
    rows = breaker_rows()
    if rows:
        print_table(f"Circuit breaker, closed path (median of {REPEAT}, µs)", rows)
    else:
        print("\nCircuit breaker comparisons: not measured yet")
