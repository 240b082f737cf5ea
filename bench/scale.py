"""Scale (issue 24): batches of 1,000, 10,000 and 100,000 tasks through the real ``Engine``
in one process, on SQLite and on Redis: the process's peak memory and the CPU per task.

Every task runs as in production (registered, leased, recorded ``running`` then its end,
its attempt folder and logs written, its events sent) through an in-process
``ScriptedAdapter`` that answers at once, so what is measured is backstay's own cost per
task. Per 1,000 tasks, 10 fail for good (a content filter), 5 run out of quota (paused,
with an escalation) and 3 fail on a bad key (escalated), so that the state left behind is
a batch a person has work in. Each size runs on a fresh state directory (or Redis
namespace); the CPU per task is the process's CPU time over the run divided by its tasks,
and should stay flat as the batch grows. Every run happens in one fresh process, whose
peak memory (``ru_maxrss``, all runs included) is printed: target ≤ 500 MB. The specs are
one list the caller holds (as ``backstay batch`` holds its suite's), and the adapter keeps
no list of its calls (a test's ``ScriptedAdapter`` does). ``first`` is the wall time from
``Engine.run`` to the first attempt's dispatch: every task is checked and recorded
before any runs.

The states of the largest runs are kept for ``status.py``, which times the commands that
read a batch on them. Run alone with ``python bench/scale.py [SIZE ...]``; ``make bench``
runs it with the rest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import status
from backstay.engine import Engine, TaskSpec, TaskState
from backstay.policy.retry import RetryPolicy
from backstay.store.location import parse_store
from backstay.store.open import open_stores
from backstay.testing import ScriptedAdapter
from shared_state import redis_server

SIZES: Final = (1_000, 10_000, 100_000)
CONCURRENCY: Final = 16
MEMORY_LIMIT_MB: Final = 500.0
POLICY: Final = RetryPolicy(name="scale", max_attempts=1, jitter=0.0)
# Position in each 1,000 → the failure its task meets (the others succeed).
_FAILURES: Final = {
    **dict.fromkeys(range(10), "ERR_LLM_CONTENT_FILTER"),
    **dict.fromkeys(range(10, 15), "ERR_LLM_QUOTA_EXHAUSTED"),
    **dict.fromkeys(range(15, 18), "ERR_AUTH_INVALID_KEY"),
}


@dataclasses.dataclass(frozen=True, slots=True)
class Run:
    store: str
    tasks: int
    cpu_s: float
    wall_s: float
    peak_mb: float
    succeeded: int
    first_s: float

    @property
    def cpu_ms_per_task(self) -> float:
        return self.cpu_s * 1e3 / self.tasks


def _specs(tasks: int, workspace: Path) -> list[TaskSpec]:
    return [
        TaskSpec(workflow_id="scale", task_id=f"t{i:06d}", adapter=ScriptedAdapter.name,
                 model="m", workspace=workspace, timeout_s=60.0, prompt="p", policy=POLICY)
        for i in range(tasks)
    ]  # fmt: skip


def _script(tasks: int) -> dict[str, list[str]]:
    return {
        f"t{i:06d}": [code] for i in range(tasks) if (code := _FAILURES.get(i % 1000)) is not None
    }


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(tasks: int, state_dir: Path, *, url: str | None = None) -> Run:
    """One batch of ``tasks`` tasks in ``state_dir`` (its state in Redis at ``url``)."""
    workspace = state_dir.parent / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    first: list[float] = []

    def dispatched(call: object) -> None:
        del call
        adapter.calls.clear()  # a test's record of every call: not the engine's memory
        if not first:
            first.append(time.perf_counter())

    adapter = ScriptedAdapter(_script(tasks), on_dispatch=dispatched)
    options = {"adapters": {adapter.name: adapter}, "concurrency": CONCURRENCY, "env": {}}
    if url is None:
        engine = Engine(state_dir, **options)  # type: ignore[arg-type]
    else:
        stores = open_stores(parse_store(url), state_dir=state_dir, secrets={})
        engine = Engine(state_dir, stores=stores, **options)  # type: ignore[arg-type]
    specs = _specs(tasks, workspace)
    started, cpu = time.perf_counter(), time.process_time()
    with engine:
        summary = engine.run_sync(specs)
    cpu_s, wall_s = time.process_time() - cpu, time.perf_counter() - started
    adapter.calls.clear()
    return Run("redis" if url else "sqlite", tasks, cpu_s, wall_s, _peak_mb(),
               summary.count(TaskState.SUCCEEDED), first[0] - started)  # fmt: skip


def _plan(
    sizes: tuple[int, ...], root: Path, url: str | None
) -> list[tuple[int, Path, str | None]]:
    """Every run: each size on SQLite, then on Redis (``url``) when there is one."""
    plan: list[tuple[int, Path, str | None]] = []
    for store_url in [None, *([url] if url else [])]:
        name = "redis" if store_url else "sqlite"
        for n in sizes:
            ns = f"{store_url}?namespace=scale{n}" if store_url else None
            plan.append((n, root / f"{name}-{n}" / "state", ns))
    return plan


def _runs_apart(plan: list[tuple[int, Path, str | None]]) -> Iterator[Run]:
    """Every run of ``plan`` in one fresh process (``make bench`` runs this after other
    benchmarks, whose memory would count in this process's peak), as they end."""
    argv = [sys.executable, __file__, "--runs", json.dumps([[n, str(p), u] for n, p, u in plan])]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as child:  # noqa: S603
        assert child.stdout is not None
        for line in child.stdout:
            yield Run(**json.loads(line))
    if child.returncode != 0:
        raise RuntimeError(f"the scale runs stopped (exit code {child.returncode})")


@contextlib.contextmanager
def _redis() -> Iterator[str | None]:
    try:
        with redis_server() as url:
            yield url
    except RuntimeError as exc:  # no redis-server here
        print(f"  (Redis skipped: {exc})")
        yield None


def report(sizes: tuple[int, ...] = SIZES) -> None:
    """Run every size on both stores, print the table, then time the reading commands."""
    print(
        f"\n== Scale (one process, in-process ScriptedAdapter, concurrency {CONCURRENCY}; "
        "CPU per task should stay flat) =="
    )
    root = Path(tempfile.mkdtemp(prefix="backstay-bench-scale-"))
    runs: list[Run] = []
    kept: dict[str, tuple[Path, str | None]] = {}
    try:
        with _redis() as url:
            plan = _plan(sizes, root, url)
            for n, state, ns in plan:
                state.mkdir(parents=True)
                kept[f"{'redis' if ns else 'sqlite'} {n:,}"] = (state, ns)
            for result in _runs_apart(plan):
                runs.append(result)
                _row(result)
            peak = max(r.peak_mb for r in runs)
            verdict = "met" if peak <= MEMORY_LIMIT_MB else "missed"
            print(f"  peak memory of the process: {peak:.0f} MB (target ≤ {MEMORY_LIMIT_MB:.0f} "
                  f"MB: {verdict})")  # fmt: skip
            for store_name in ("sqlite", "redis"):
                mine = [r for r in runs if r.store == store_name]
                if len(mine) > 1:
                    ratio = mine[-1].cpu_ms_per_task / mine[0].cpu_ms_per_task
                    print(f"  {store_name}: CPU per task at {mine[-1].tasks:,} / at "
                          f"{mine[0].tasks:,} = {ratio:.2f}")  # fmt: skip
            status.report(kept)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _row(r: Run) -> None:
    print(
        f"  {r.store:<7} {r.tasks:>8,} tasks  {r.cpu_s:8.1f} s CPU  {r.wall_s:8.1f} s wall  "
        f"{r.cpu_ms_per_task:6.2f} ms CPU/task  peak {r.peak_mb:5.0f} MB  "
        f"first attempt {r.first_s:5.2f} s  ({r.succeeded:,} succeeded)",
        flush=True,
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    if sys.argv[1:2] == ["--runs"]:  # the runs, in this one fresh process: JSON lines
        for size, folder, store in json.loads(sys.argv[2]):
            done = run(size, Path(folder), url=store)
            print(json.dumps(dataclasses.asdict(done)), flush=True)
    else:
        report(tuple(int(a) for a in sys.argv[1:]) or SIZES)
