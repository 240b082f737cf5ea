"""A batch of 20,000 tasks on SQLite and then on a real Redis, in one process
(``scale_child.py``): every task ends, the counts per state agree with a full count,
and the process never holds more than 500 MB. (The CPU per task, flat from 1,000 to
100,000 tasks, is measured by ``bench/scale.py``, not here.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
from tests.engine import scale_child as child

from backstay.store.location import StoreLocation

TASKS: Final = 20_000
MEMORY_LIMIT_MB: Final = 500
LIMIT_S: Final = 1_500


@pytest.mark.slow
def test_twenty_thousand_tasks_on_both_stores_in_one_process(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    proc = subprocess.Popen(
        [sys.executable, child.__file__, str(tmp_path), str(TASKS), str(redis_location.url)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = proc.communicate(timeout=LIMIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == 0, err.decode()[-3000:]
    found = json.loads(out.decode().strip().splitlines()[-1])
    failed = len(range(0, TASKS, child.FAILING))
    for store in ("sqlite", "redis"):
        counts = found[store]["counts"]
        assert counts == found[store]["full"], store
        assert (counts["succeeded"], counts["failed"]) == (TASKS - failed, failed), store
    assert found["peak_mb"] <= MEMORY_LIMIT_MB
