"""Recording a batch (issue 24): how soon its first tasks can run, and how long Redis is
held by one script, at 100,000 tasks.

For each store (SQLite in a fresh directory, Redis on a fresh ``redis-server``), ``N``
specs (default 100,000, as the scale benchmark's) are checked by the real ``Engine`` and
then recorded two ways:

* whole (``TaskStore.register_each``, what ``Engine.run`` does without ``early``): the wall
  and CPU seconds until every task is recorded, i.e. until the first task could run;
* a page at a time (``PageFeed``, what ``Engine.run(early=...)`` and ``backstay batch``
  do): the seconds until the first page is in (the first task runs then) and until the
  last one is.

On Redis every command is logged (``slowlog-log-slower-than 0``) and the longest script
(``EVALSHA``) is printed: no script should hold Redis for more than a page or window of
1,000 tasks. Run alone with ``python bench/register.py [N]``; ``make bench`` runs it after
``batch_cpu.py``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Final

import redis

from backstay.engine import Engine, TaskSpec
from backstay.engine.registration import EarlyStart, PageFeed
from backstay.policy.retry import RetryPolicy
from backstay.store.location import parse_store
from backstay.store.open import open_stores
from backstay.testing import ScriptedAdapter
from shared_state import redis_server

TASKS: Final = 100_000
POLICY: Final = RetryPolicy(name="register", max_attempts=1, jitter=0.0)


def _specs(workspace: Path, n: int, workflow: str) -> list[TaskSpec]:
    return [
        TaskSpec(
            workflow_id=workflow,
            task_id=f"t{i}",
            adapter=ScriptedAdapter.name,
            model="m",
            workspace=workspace,
            timeout_s=60.0,
            prompt="p",
            policy=POLICY,
        )
        for i in range(n)
    ]


def _engine(state: Path, url: str | None) -> Engine:
    state.mkdir(parents=True)
    stores = None if url is None else open_stores(parse_store(url), state_dir=state, secrets={})
    adapter = ScriptedAdapter()
    return Engine(state, adapters={adapter.name: adapter}, env={}, stores=stores)


def _longest_script_ms(url: str) -> tuple[float, int]:
    client = redis.Redis.from_url(url)
    try:
        entries = client.slowlog_get(1_000_000)
        scripts = [e["duration"] for e in entries if b"EVALSHA" in e["command"][:8].upper()]
        return (max(scripts) / 1000 if scripts else 0.0), len(scripts)
    finally:
        client.close()


def _slowlog_all(url: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        client.config_set("slowlog-log-slower-than", 0)
        client.config_set("slowlog-max-len", 1_000_000)
        client.slowlog_reset()
    finally:
        client.close()


def measure(name: str, url: str | None, n: int, root: Path) -> None:
    for mode in ("whole", "pages"):
        where = None if url is None else f"{url}?namespace={mode}"
        with _engine(root / f"{name}-{mode}", where) as engine:
            specs = _specs(root / "ws", n, f"reg-{mode}")
            if url is not None:
                _slowlog_all(url)
            wall, cpu = time.perf_counter(), time.process_time()
            order = engine._checked(specs)  # what Engine.run checks first
            checked = time.perf_counter() - wall
            if mode == "whole":
                engine.store.register_each(specs, at=engine.clock.now())
                first = time.perf_counter() - wall
            else:
                feed = PageFeed(
                    engine.store, specs, order, early=EarlyStart(), at=engine.clock.now()
                )
                feed.record_next()
                first = time.perf_counter() - wall
                feed.record_all()
            done_wall, done_cpu = time.perf_counter() - wall, time.process_time() - cpu
            line = (f"  {name:6} {mode:5} {n:>7,} tasks: checked {checked:5.2f} s, first task "
                    f"can run {first:6.2f} s, all recorded {done_wall:6.2f} s wall / "
                    f"{done_cpu:6.2f} s CPU")  # fmt: skip
            if url is not None:
                longest, count = _longest_script_ms(url)
                line += f"; longest script {longest:6.1f} ms of {count} scripts"
            print(line, flush=True)


def report(n: int = TASKS) -> None:
    """Print the section."""
    print(f"\n== Recording a batch of {n:,} tasks (checked, then recorded) ==")
    with tempfile.TemporaryDirectory(prefix="backstay-bench-register-") as tmp:
        measure("sqlite", None, n, Path(tmp))
        with redis_server() as url:
            measure("redis", url, n, Path(tmp))


if __name__ == "__main__":
    report(int(sys.argv[1]) if len(sys.argv) > 1 else TASKS)
