"""A batch (issue 24): the CPU time of ``backstay batch`` per task on the API path, and how
soon its first attempt starts.

``backstay batch`` runs a suite of ``anthropic-api`` tasks of up to 1,000 runs each (N runs
in all, each one Messages API call, streamed) against the fake provider, which serves in
its own process (``provider_process.py``) so that its CPU time is not counted. The batch is
a child process timed by its own CPU time (user + system, ``os.wait4``), at ``SIZES`` tasks:

* CPU per task: the batch's CPU time over its tasks, at each size; flat when the two agree
  (the start-up, SDK import included, is spread over more tasks at the larger size, so the
  marginal figure, (CPU(large) − CPU(small)) / (large − small), is printed too);
* first attempt: wall seconds from the launch of ``backstay batch`` to the first
  ``task.started`` event of its event log, beside the CPU time of ``import anthropic``.

Baselines, measured in the same run: ``python -c pass``, ``import anthropic``, and the bare
SDK call: ``N`` calls of ``AsyncAnthropic.messages.stream`` on one reused client, and on a
new client per call, in one process, with the same concurrency, CPU per call.

Targets: ≤ 6 ms of CPU per task at 10,000 tasks, flat from 1,000; the first attempt ≤ 1 s
after launch plus the SDK import.

Run alone with ``python bench/batch_cpu.py [SMALL LARGE]`` (default 1000 10000);
``make bench`` runs it with the rest (at ``BENCH_SIZES`` when set, e.g. ``200 1000``).

``python bench/batch_cpu.py --against SRC [TASKS [ROUNDS]]`` compares this tree with
another one's ``src`` folder (``git archive`` of a commit, unpacked): batches of ``TASKS``
(default 1000) alternate between the two, ``ROUNDS`` each (default 3), against one fake
provider, so that both see the same load of a shared machine; the least CPU per task of
each is printed.

The report and ``--against`` print the system part of each batch's CPU time beside it;
every mode keeps the batches' folders until it ends: a batch started right after the last
one's files were deleted paid for the deletion in system time on a file system without a
journal (``_FOLDERS``).

``python bench/batch_cpu.py --pair BEFORE AFTER [TASKS [ROUNDS]]`` does the same with two
``src`` folders, ``AFTER`` standing for this tree: a change measured alone, apart from
whatever else the working tree holds (each folder a ``git archive`` of a commit, unpacked).

``python bench/batch_cpu.py --deletion [TASKS [ROUNDS]]`` measures what deleting files
costs the next batch: ``2 × ROUNDS`` (default 3) batches of ``TASKS`` (default 1000) with
nothing deleted before them, then ``ROUNDS`` batches each started right after the folders
of two earlier ones were deleted; the CPU and system time per task of each.

``python bench/batch_cpu.py --first TASKS [ROUNDS]`` launches ``backstay batch`` of
``TASKS`` runs ``ROUNDS`` times (default 3), each stopped once its first attempt ended, and
prints the seconds from each launch to its first ``task.started`` and to its first
``attempt.ended`` (the SDK imported in the attempt and its call answered), beside the CPU
time of ``import anthropic`` (no batch runs to its end).

``python bench/batch_cpu.py --collector SRC [TASKS]`` runs one batch of ``TASKS`` (default
1000) with another tree's ``src``, then one with this tree, each timing the garbage
collector from inside the batch process (``gc.callbacks``): its CPU time in collections
(and, of that, while the batch runs frozen), the collections of each generation, and the
process's CPU time.

``python bench/batch_cpu.py --statements [TASKS [SRC]]`` counts what one batch of ``TASKS``
(default 500) asks of SQLite, per task: its statements by kind and its transactions, as
``sqlite3``'s trace callback sees them on every connection of the batch process (the
statements triggers run are counted too); with ``SRC``, a batch of that tree first. The
counts do not depend on the machine's load.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

sys.path.insert(0, str(Path(__file__).parent))

import provider_process

SIZES: Final = (1_000, 10_000)
CONCURRENCY: Final = 8
MODEL: Final = "claude-sonnet-4-5"
KEY: Final = "sk-ant-bench-0000000000000000"  # the fake provider takes any key
TARGET_MS_PER_TASK: Final = 6.0
TARGET_FIRST_ATTEMPT_S: Final = 1.0
SDK_CALLS: Final = 500
FIRST_LIMIT_S: Final = 120.0  # how long --first waits for a batch's first attempt
_SCRIPT = Path(sys.executable).with_name("backstay")
BACKSTAY: Final = str(_SCRIPT) if _SCRIPT.exists() else "backstay"

SUITE: Final = """\
suite: cpu
defaults: {{adapter: anthropic-api, model: {model}, timeout_s: 60, policy: standard}}
adapters:
  anthropic-api: {{base_url: "{url}", max_tokens: 64}}
tasks:
{tasks}"""
MAX_RUNS: Final = 1000  # a suite task's runs at most


def _tasks(runs: int) -> str:
    """The suite's tasks: ``runs`` runs in all, up to ``MAX_RUNS`` a task."""
    sizes = [min(MAX_RUNS, runs - start) for start in range(0, runs, MAX_RUNS)]
    return "".join(
        f'  - {{id: t{i}, prompt: "Say hello", runs: {n}}}\n' for i, n in enumerate(sizes)
    )


def _cpu(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """The CPU seconds of one run of ``argv`` (its output discarded) and its exit code."""
    user, system, code = _cpu_parts(argv, env)
    return user + system, code


def _cpu_parts(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """The user and system CPU seconds of one run of ``argv`` and its exit code."""
    child = subprocess.Popen(  # noqa: S603 - our own interpreter and command
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    _pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime, usage.ru_stime, child.returncode


def least_cpu(argv: list[str], rounds: int = 5) -> float:
    return min(_cpu(argv)[0] for _ in range(rounds))


def _first_attempt(events: Path) -> dt.datetime:
    return _first_event(events, ("retry.attempt_started", "task.started"))


def _first_event(events: Path, names: tuple[str, ...]) -> dt.datetime:
    """When the first event of the log called one of ``names`` happened."""
    with events.open(encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            if event.get("event") in names:
                return dt.datetime.fromisoformat(event["at"])
    raise RuntimeError(f"no {' or '.join(names)} in {events}")


# The batch process with the collector timed: ``backstay``'s CLI under gc callbacks that
# add up each collection's CPU time, printed to stderr at exit with the process's CPU time.
_TIMED_COLLECTOR: Final = r"""
import atexit, gc, resource, sys, time
spent = {"all": 0.0, "frozen": 0.0, "since": 0.0, "runs": [0, 0, 0]}
def timed(phase, info):
    if phase == "start":
        spent["since"] = time.process_time()
        return
    took = time.process_time() - spent["since"]
    spent["all"] += took
    spent["runs"][info["generation"]] += 1
    if gc.get_freeze_count():
        spent["frozen"] += took
def report():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print("COLLECTOR", usage.ru_utime + usage.ru_stime, spent["all"], spent["frozen"],
          *spent["runs"], file=sys.stderr)
gc.callbacks.append(timed)
atexit.register(report)
sys.argv = ["backstay", *sys.argv[1:]]
from backstay.cli import main
main()
"""


# The batch process with every SQLite statement counted by its first word (BEGIN with its
# kind), printed to stderr at exit.
_COUNTED_STATEMENTS: Final = r"""
import atexit, collections, sqlite3, sys
counts = collections.Counter()
def counted(statement):
    words = statement.split()
    if words:
        kind = words[0].upper()
        counts[kind + (" " + words[1].upper() if kind == "BEGIN" and len(words) > 1 else "")] += 1
connect = sqlite3.connect
def connect_counted(*args, **kwargs):
    conn = connect(*args, **kwargs)
    conn.set_trace_callback(counted)
    return conn
sqlite3.connect = connect_counted
atexit.register(lambda: print("STATEMENTS", *sorted(counts.items()), file=sys.stderr))
sys.argv = ["backstay", *sys.argv[1:]]
from backstay.cli import main
main()
"""


# The batches' folders, removed when this command ends rather than after each batch: on a
# file system without a journal (ext4 with no journal, as on the benchmark machine) a new
# file or folder is given an inode only after a scan that passes over every inode freed in
# the last seconds to minutes, so a batch started right after the last one's 7 inodes a
# task were deleted paid for them in system time (docs/benchmarks.md, *A batch's files*).
_FOLDERS: Final[list[str]] = []


def _remove_folders() -> None:
    while _FOLDERS:
        shutil.rmtree(_FOLDERS.pop(), ignore_errors=True)


atexit.register(_remove_folders)


@contextlib.contextmanager
def _suite(
    url: str, tasks: int, src: str | None, *, prefix: str
) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    """A folder of its own holding a suite of ``tasks`` runs against ``url``: (the folder,
    the suite file, the batch's environment; with ``src``, backstay imported from there).
    The folder stays until the command ends (``_FOLDERS``)."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    _FOLDERS.append(str(root))
    suite = root / "suite.yaml"
    suite.write_text(SUITE.format(model=MODEL, url=url, tasks=_tasks(tasks)), encoding="utf-8")
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY}
    if src is not None:
        env["PYTHONPATH"] = src
    yield root, suite, env


def collector(url: str, tasks: int, *, src: str | None = None) -> list[float]:
    """One batch of ``tasks`` with its collector timed: [CPU s, s in collections, of which
    frozen, gen0, gen1 and gen2 collections]."""
    with _suite(url, tasks, src, prefix="backstay-batch-gc-") as (root, suite, env):
        argv = [sys.executable, "-c", _TIMED_COLLECTOR, "batch", str(suite)]
        argv += ["--state-dir", str(root / "state"), "--concurrency", str(CONCURRENCY)]
        done = subprocess.run(  # noqa: S603 - our own interpreter and command
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False
        )
    lines = [line for line in done.stderr.splitlines() if line.startswith("COLLECTOR ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"backstay batch of {tasks} exited with {done.returncode}")
    return [float(field) for field in lines[-1].split()[1:]]


def statements(url: str, tasks: int, *, src: str | None = None) -> dict[str, float]:
    """One batch of ``tasks`` with its SQLite statements counted: kind → count per task."""
    with _suite(url, tasks, src, prefix="backstay-batch-sql-") as (root, suite, env):
        argv = [sys.executable, "-c", _COUNTED_STATEMENTS, "batch", str(suite)]
        argv += ["--state-dir", str(root / "state"), "--concurrency", str(CONCURRENCY)]
        done = subprocess.run(  # noqa: S603 - our own interpreter and command
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False
        )
    lines = [line for line in done.stderr.splitlines() if line.startswith("STATEMENTS")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"backstay batch of {tasks} exited with {done.returncode}")
    pairs = re.findall(r"\('([A-Z ]+)', (\d+)\)", lines[-1])
    return {kind: int(count) / tasks for kind, count in pairs}


def count_statements(tasks: int, src: str | None) -> None:
    """Print the statements and transactions per task of a batch (of ``src`` first)."""
    trees: list[tuple[str, str | None]] = [("other", src)] if src else []
    with provider_process.serve() as url:
        for name, where in [*trees, ("this", None)]:
            per_task = statements(url, tasks, src=where)
            kinds = ("SELECT", "INSERT", "UPDATE", "DELETE")
            shown = ", ".join(f"{per_task.get(k, 0.0):.1f} {k}" for k in kinds)
            print(
                f"  {name} tree: {sum(per_task.values()):5.1f} statements per task ({shown}; "
                f"{per_task.get('BEGIN IMMEDIATE', 0.0):.2f} transactions), {tasks:,} tasks",
                flush=True,
            )


def collectors(src: str, tasks: int) -> None:
    """The collector's time in a batch of the other tree, then of this one."""
    with provider_process.serve() as url:
        for name, where in (("other", src), ("this", None)):
            cpu, spent, frozen, *runs = collector(url, tasks, src=where)
            print(
                f"  {name} tree: {cpu:7.2f} s CPU ({cpu * 1e3 / tasks:5.2f} ms per task), "
                f"{spent:6.3f} s in collections ({frozen:.3f} s of it frozen), "
                f"collections by generation {[int(n) for n in runs]} ({tasks:,} tasks)",
                flush=True,
            )


def batch(url: str, tasks: int, *, src: str | None = None) -> tuple[float, float, float]:
    """``backstay batch`` of ``tasks`` runs: (its CPU seconds, seconds from launch to its
    first attempt, the system part of its CPU seconds); with ``src``, backstay imported
    from that folder instead."""
    with _suite(url, tasks, src, prefix="backstay-batch-cpu-") as (root, suite, env):
        argv = [BACKSTAY, "batch", str(suite), "--state-dir", str(root / "state")]
        launched = dt.datetime.now(dt.UTC)
        user, system, code = _cpu_parts([*argv, "--concurrency", str(CONCURRENCY)], env)
        if code != 0:
            raise RuntimeError(f"backstay batch of {tasks} exited with {code}")
        first = _first_attempt(root / "state" / "events.jsonl")
    return user + system, (first - launched).total_seconds(), system


async def _sdk_calls(url: str, calls: int, *, reuse: bool) -> None:
    import anthropic  # noqa: PLC0415 - the baseline's own import

    shared = anthropic.AsyncAnthropic(api_key=KEY, base_url=url, max_retries=0)
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one() -> None:
        async with gate:
            client = (
                shared
                if reuse
                else anthropic.AsyncAnthropic(api_key=KEY, base_url=url, max_retries=0)
            )
            async with client.messages.stream(
                model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "Say hello"}]
            ) as stream:
                await stream.get_final_message()
            if not reuse:
                await client.close()

    await asyncio.gather(*(one() for _ in range(calls)))
    await shared.close()


def sdk_ms_per_call(url: str, *, reuse: bool, calls: int = SDK_CALLS) -> float:
    """CPU ms per streamed call of the bare SDK (warmed up first) in this process."""
    asyncio.run(_sdk_calls(url, 20, reuse=reuse))
    started = time.process_time()
    asyncio.run(_sdk_calls(url, calls, reuse=reuse))
    return (time.process_time() - started) * 1e3 / calls


def _sizes() -> tuple[int, int]:
    given = sys.argv[1:] or os.environ.get("BENCH_SIZES", "").split()
    small, large = (int(n) for n in given) if given else SIZES
    return small, large


def report() -> None:
    """Print the batch section."""
    small, large = _sizes()
    python = least_cpu([sys.executable, "-c", "pass"])
    sdk_import = least_cpu([sys.executable, "-c", "import anthropic"])
    print(
        f"\n== A batch (backstay batch, anthropic-api streamed, fake provider in its own "
        f"process, concurrency {CONCURRENCY}; CPU of the batch process) =="
    )
    print(f"  python -c pass                  {python:7.3f} s", flush=True)
    print(f"  import anthropic                {sdk_import:7.3f} s", flush=True)
    runs: dict[int, tuple[float, float, float]] = {}
    with provider_process.serve() as url:
        reused = sdk_ms_per_call(url, reuse=True)
        print(f"  bare SDK call, one client       {reused:7.2f} ms CPU per call", flush=True)
        fresh = sdk_ms_per_call(url, reuse=False, calls=SDK_CALLS // 5)
        print(f"  bare SDK call, a client each    {fresh:7.2f} ms CPU per call", flush=True)
        for size in (small, large):
            cpu, first, system = runs[size] = batch(url, size)
            print(
                f"  batch of {size:>6,} tasks          {cpu:7.2f} s CPU = "
                f"{cpu * 1e3 / size:5.2f} ms per task ({cpu * 1e3 / size / reused:4.1f}x the "
                f"bare call; {system * 1e3 / size:.2f} ms of it system); first attempt "
                f"{first:.2f} s after launch",
                flush=True,
            )
    (cpu_s, first_s, _), (cpu_l, first_l, _) = runs[small], runs[large]
    marginal = (cpu_l - cpu_s) * 1e3 / (large - small)
    per_large = cpu_l * 1e3 / large
    print(f"  marginal CPU per task ({small:,} → {large:,})  {marginal:5.2f} ms")
    print("  targets:")
    met = per_large <= TARGET_MS_PER_TASK
    print(
        f"    {'met    ' if met else 'not met'} ≤ {TARGET_MS_PER_TASK:g} ms CPU per task at "
        f"{large:,}: {per_large:.2f} ms"
    )
    flat = marginal <= cpu_s * 1e3 / small
    print(
        f"    {'met    ' if flat else 'not met'} flat: marginal {marginal:.2f} ms ≤ "
        f"{cpu_s * 1e3 / small:.2f} ms per task at {small:,}"
    )
    limit = TARGET_FIRST_ATTEMPT_S + sdk_import
    for size, first in ((small, first_s), (large, first_l)):
        print(
            f"    {'met    ' if first <= limit else 'not met'} first attempt ≤ "
            f"{TARGET_FIRST_ATTEMPT_S:g} s + import anthropic ({limit:.2f} s) at {size:,} "
            f"tasks: {first:.2f} s"
        )


def against(src: str, tasks: int, rounds: int, *, this: str | None = None) -> None:
    """Alternate batches of this tree (``this``: another ``src`` folder standing for it)
    and of ``src``; print each and the least of each."""
    for folder in (src, this):
        if folder is not None and not (Path(folder) / "backstay" / "__init__.py").is_file():
            raise SystemExit(f"{folder}: no backstay package in that folder")
    least: dict[str, float] = {}
    with provider_process.serve() as url:
        for _ in range(rounds):
            for name, where in (("other", src), ("this", this)):
                cpu, _first, system = batch(url, tasks, src=where)
                per = cpu * 1e3 / tasks
                least[name] = min(least.get(name, per), per)
                print(
                    f"  {name} tree: {per:6.2f} ms CPU per task "
                    f"({system * 1e3 / tasks:.2f} ms of it system)",
                    flush=True,
                )
    print(
        f"  least of {rounds}: this tree {least['this']:.2f} ms, the other "
        f"{least['other']:.2f} ms per task ({tasks:,} tasks)"
    )


def _delete_oldest(count: int) -> int:
    """Delete the ``count`` oldest batch folders still kept; how many inodes they held."""
    inodes = 0
    for _ in range(count):
        folder = _FOLDERS.pop(0)
        inodes += 1 + sum(len(dirs) + len(files) for _, dirs, files in os.walk(folder))
        shutil.rmtree(folder, ignore_errors=True)
    return inodes


def after_deletion(tasks: int, rounds: int) -> None:
    """Batches of ``tasks`` with nothing deleted before them (``2 × rounds``, each folder
    kept), then ``rounds`` batches each started right after the two oldest kept folders
    were deleted: the CPU and system time per task of each."""

    def one(url: str, label: str) -> None:
        cpu, _first, system = batch(url, tasks)
        print(
            f"  {label}: {cpu * 1e3 / tasks:6.2f} ms CPU per task "
            f"({system * 1e3 / tasks:.2f} ms of it system)",
            flush=True,
        )

    with provider_process.serve() as url:
        for _ in range(2 * rounds):
            one(url, "nothing deleted before")
        for _ in range(rounds):
            inodes = _delete_oldest(2)
            one(url, f"right after {inodes:,} inodes were deleted")


def first_attempt(tasks: int, rounds: int) -> None:
    """Launch ``backstay batch`` of ``tasks`` runs ``rounds`` times, each stopped (SIGKILL)
    once its first attempt ended; print the seconds from each launch to its first
    ``task.started`` (the target's measure) and to its first ``attempt.ended`` (the SDK
    imported and the first call answered), beside the CPU time of ``import anthropic``."""
    sdk_import = least_cpu([sys.executable, "-c", "import anthropic"], 3)
    limit = TARGET_FIRST_ATTEMPT_S + sdk_import
    print(f"  import anthropic: {sdk_import:.3f} s of CPU (least of 3); target {limit:.2f} s")
    with provider_process.serve() as url:
        for _ in range(rounds):
            with _suite(url, tasks, None, prefix="backstay-batch-first-") as (root, suite, env):
                events = root / "state" / "events.jsonl"
                argv = [BACKSTAY, "batch", str(suite), "--state-dir", str(root / "state"),
                        "--concurrency", str(CONCURRENCY)]  # fmt: skip
                launched = dt.datetime.now(dt.UTC)
                child = subprocess.Popen(  # noqa: S603 - our own command
                    argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
                first = ended = None
                try:
                    deadline = time.monotonic() + FIRST_LIMIT_S
                    while ended is None and child.poll() is None and time.monotonic() < deadline:
                        time.sleep(0.05)
                        with contextlib.suppress(FileNotFoundError, RuntimeError, ValueError):
                            first = first or _first_attempt(events)
                            ended = _first_event(events, ("attempt.ended",))
                finally:
                    child.kill()
                    child.wait()
            if first is None:
                print(f"  first attempt of a batch of {tasks:,} tasks: none")
                continue
            took = (first - launched).total_seconds()
            answered = "none" if ended is None else f"{(ended - launched).total_seconds():.2f} s"
            print(
                f"  first attempt of a batch of {tasks:,} tasks: {took:.2f} s after launch "
                f"({'met' if took <= limit else 'not met'}); its call answered {answered}"
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--first"]:
        first_attempt(int(sys.argv[2]), int(sys.argv[3]) if sys.argv[3:] else 3)
    elif sys.argv[1:2] == ["--statements"]:
        count_statements(int(sys.argv[2]) if sys.argv[2:] else 500, (sys.argv[3:4] or [None])[0])
    elif sys.argv[1:2] == ["--collector"]:
        collectors(sys.argv[2], int(sys.argv[3]) if sys.argv[3:] else 1000)
    elif sys.argv[1:2] == ["--deletion"]:
        after_deletion(int(sys.argv[2]) if sys.argv[2:] else 1000, int((sys.argv[3:4] or [3])[0]))
    elif sys.argv[1:2] == ["--against"]:
        extra = [int(n) for n in sys.argv[3:5]]
        against(sys.argv[2], *(extra + [1000, 3][len(extra) :]))
    elif sys.argv[1:2] == ["--pair"]:
        extra = [int(n) for n in sys.argv[4:6]]
        against(sys.argv[2], *(extra + [1000, 3][len(extra) :]), this=sys.argv[3])
    else:
        report()
