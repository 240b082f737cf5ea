"""A batch run by the real ``Engine`` in its own process until it is killed, for the test
that the counts per state agree with a full count after a crash mid-batch.

Run as ``python summary_batch_child.py STATE_DIR [REDIS_URL]``: ``TASKS`` tasks of an
in-process ``ScriptedAdapter`` whose every attempt holds ``HOLD_S`` (so a kill lands with
tasks running), one in ``FAILING`` failing for good, on SQLite in ``STATE_DIR`` or on the
Redis store ``REDIS_URL``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

from backstay.engine import Engine, TaskSpec
from backstay.policy.retry import RetryPolicy
from backstay.store.location import parse_store
from backstay.store.open import open_stores
from backstay.testing import ScriptedAdapter

TASKS: Final = 400
CONCURRENCY: Final = 4
HOLD_S: Final = 0.2
FAILING: Final = 7  # every seventh task fails (a content filter), never retried
POLICY: Final = RetryPolicy(name="crash", max_attempts=1, jitter=0.0)


def specs(workspace: Path) -> list[TaskSpec]:
    return [
        TaskSpec(workflow_id="crash", task_id=f"t{i:04d}", adapter=ScriptedAdapter.name,
                 model="m", workspace=workspace, timeout_s=60.0, prompt="p", policy=POLICY)
        for i in range(TASKS)
    ]  # fmt: skip


def main(state_dir: str, url: str | None = None) -> int:
    folder = Path(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    script = {f"t{i:04d}": ["ERR_LLM_CONTENT_FILTER"] for i in range(0, TASKS, FAILING)}
    adapter = ScriptedAdapter(script, hold_s=HOLD_S)
    options = {"adapters": {adapter.name: adapter}, "concurrency": CONCURRENCY, "env": {}}
    if url is None:
        engine = Engine(folder, **options)  # type: ignore[arg-type]
    else:
        stores = open_stores(parse_store(url), state_dir=folder, secrets={})
        engine = Engine(folder, stores=stores, **options)  # type: ignore[arg-type]
    with engine:
        engine.run_sync(specs(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
