"""Ray executor overhead: the same batch through the engine's own (local) executor and
through ``RayExecutor`` on a local Ray cluster, in the same run.

Every run is real: an Anthropic SDK call (``anthropic-api`` adapter) to the fake provider
on 127.0.0.1 answering at once, claimed under its lease and recorded ``running`` then
``succeeded`` in a fresh ``state.sqlite``. Locally the engine drives the runs in its own
event loop; with Ray each run is one Ray task (``max_retries=0``) whose worker opens the
stores from their location and drives it. The difference per run, at concurrency 1 (one
run after the other: the added latency of a run) and at the batch's concurrency (the
added wall time per run of a batch), is the executor's overhead. The cluster is started
once (its start and shutdown are printed apart: a one-off cost per batch) and warmed up
(its workers spawned and their stores opened) before the measured batches.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from pathlib import Path
from typing import Final

from backstay.config import load_suite
from backstay.engine import Engine, SuiteBatch, TaskState
from backstay.executors import RayExecutor, RaySettings
from backstay.executors._ray_cluster import ray_session
from backstay.fakeprovider import FakeProvider

KEY_VAR: Final = "BENCH_RAY_ANTHROPIC_KEY"
KEY: Final = "sk-ant-bench-ray-000000000000"
RUNS: Final = 200
SEQUENTIAL_RUNS: Final = 60
CONCURRENCY: Final = 4
WARMUP_RUNS: Final = 8
SUITE: Final = """\
suite: {name}
defaults: {{adapter: anthropic-api, model: claude-haiku-4-5, timeout_s: 30,
           policy: {{extends: agent_dispatch, max_attempts: 1}}}}
adapters:
  anthropic-api: {{api_key_env: {key}, base_url: "{url}", max_tokens: 16}}
tasks:
{tasks}
"""


@dataclasses.dataclass(frozen=True, slots=True)
class Batch:
    runs: int
    concurrency: int
    elapsed_s: float

    @property
    def ms_per_run(self) -> float:
        return self.elapsed_s * 1e3 / self.runs


def _suite(root: Path, url: str, runs: int, name: str) -> Path:
    tasks = "\n".join(f"  - {{id: r{i:04d}, prompt: 'Say hello {i}'}}" for i in range(runs))
    path = root / f"{name}.yaml"
    path.write_text(SUITE.format(name=name, key=KEY_VAR, url=url, tasks=tasks), encoding="utf-8")
    return path


def measure(url: str, runs: int, concurrency: int, *, ray: bool) -> Batch:
    """One batch of ``runs`` through a fresh state directory; its wall time."""
    name = f"{'ray' if ray else 'local'}{concurrency}x{runs}"
    with tempfile.TemporaryDirectory(prefix="backstay-bench-ray-") as tmp:
        root = Path(tmp)
        suite = load_suite(_suite(root, url, runs, name))
        batch = SuiteBatch.open(suite, root / "state")
        batch.prepare()
        executor = RayExecutor(RaySettings()) if ray else None
        with Engine(root / "state", concurrency=concurrency, executor=executor) as engine:
            started = time.perf_counter()
            summary = engine.run_sync(batch.specs)
            elapsed = time.perf_counter() - started
    done = summary.count(TaskState.SUCCEEDED)
    assert done == runs, f"{done} of {runs} runs succeeded"
    return Batch(runs, concurrency, elapsed)


def _row(label: str, value: str, note: str = "") -> None:
    print(f"  {label:<46} {value:>12}   {note}")


def report() -> None:
    """Print the Ray executor section."""
    print(
        f"\n== Ray executor overhead (anthropic-api runs against the fake provider, a local "
        f"Ray cluster of {CONCURRENCY} CPUs, same run) =="
    )
    os.environ.setdefault(KEY_VAR, KEY)  # the workers inherit it from the cluster
    with FakeProvider() as fake:
        started = time.perf_counter()
        with ray_session(RaySettings(num_cpus=CONCURRENCY), concurrency=CONCURRENCY):
            up_s = time.perf_counter() - started
            measure(fake.url, WARMUP_RUNS, CONCURRENCY, ray=True)
            rows = []
            for runs, concurrency in ((SEQUENTIAL_RUNS, 1), (RUNS, CONCURRENCY)):
                local = measure(fake.url, runs, concurrency, ray=False)
                remote = measure(fake.url, runs, concurrency, ray=True)
                rows.append((runs, concurrency, local, remote))
            stopping = time.perf_counter()
        down_s = time.perf_counter() - stopping
    _row("local cluster start (ray.init)", f"{up_s:.1f} s", "once per batch without --ray-address")
    _row("local cluster shutdown", f"{down_s:.1f} s")
    for runs, concurrency, local, remote in rows:
        extra = remote.ms_per_run - local.ms_per_run
        ratio = remote.elapsed_s / local.elapsed_s
        _row(
            f"{runs} runs, concurrency {concurrency}: local",
            f"{local.ms_per_run:.1f} ms/run",
            f"{local.elapsed_s:.2f} s",
        )
        _row(
            f"{runs} runs, concurrency {concurrency}: Ray",
            f"{remote.ms_per_run:.1f} ms/run",
            f"{remote.elapsed_s:.2f} s; +{extra:.1f} ms per run ({ratio:.1f}x)",
        )


if __name__ == "__main__":
    report()
