"""One process running a large batch on SQLite, then the same on Redis, for the scale
test: ``python scale_child.py ROOT TASKS [REDIS_URL]``. Each batch is ``TASKS`` tasks of
an in-process ``ScriptedAdapter`` (one in ``FAILING`` fails for good) through the real
``Engine``; it prints the process's peak memory (MB) and, per store, the counts per
state from the store's counters and from a full count of its records, as one JSON line."""

from __future__ import annotations

import json
import resource
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Final

from backstay.engine import Engine, TaskSpec
from backstay.policy.retry import RetryPolicy
from backstay.store.location import parse_store
from backstay.store.open import open_stores
from backstay.testing import ScriptedAdapter

CONCURRENCY: Final = 16
FAILING: Final = 100
POLICY: Final = RetryPolicy(name="scale", max_attempts=1, jitter=0.0)


def run(tasks: int, state_dir: Path, url: str | None) -> dict[str, Any]:
    workspace = state_dir.parent / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    state_dir.mkdir(exist_ok=True)
    ids = [f"t{i:06d}" for i in range(tasks)]
    script = {task: ["ERR_LLM_CONTENT_FILTER"] for task in ids[::FAILING]}
    adapter = ScriptedAdapter(script)
    options: dict[str, Any] = {"adapters": {adapter.name: adapter}, "concurrency": CONCURRENCY,
                               "env": {}}  # fmt: skip
    if url is not None:
        options["stores"] = open_stores(parse_store(url), state_dir=state_dir, secrets={})
    specs = [
        TaskSpec(workflow_id="scale", task_id=task, adapter=adapter.name, model="m",
                 workspace=workspace, timeout_s=60.0, prompt="p", policy=POLICY)
        for task in ids
    ]  # fmt: skip
    with Engine(state_dir, **options) as engine:
        engine.run_sync(specs)
        store: Any = engine.store
        counted = {str(s): n for s, n in store.state_counts().items()}
        full = Counter(str(record.state) for record in store.tasks())
    adapter.calls.clear()
    return {"counts": counted, "full": {s: full.get(s, 0) for s in counted}}


def main(root: str, tasks: str, url: str | None = None) -> int:
    out = {"sqlite": run(int(tasks), Path(root) / "sqlite" / "state", None)}
    if url is not None:
        out["redis"] = run(int(tasks), Path(root) / "redis" / "state", url)
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
