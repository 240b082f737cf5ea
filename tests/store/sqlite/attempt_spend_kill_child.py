"""A batch with a spending budget, run by an Engine on SQLite until it ends or is killed,
for the test that every attempt keeps its spend row in step with it
(``test_attempt_spend.py``).

Run as ``python -m tests.store.sqlite.attempt_spend_kill_child STATE_DIR``: ``TASKS``
tasks of the scripted adapter (every third fails once and is retried), each attempt
holding a moment so that a kill lands in every phase. Run again on the same directory, it
resumes the batch.
"""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from pathlib import Path
from typing import Final

from tests.engine.support import OK, ScriptedAdapter, spec

from backstay.engine import Engine
from backstay.failure import Failure
from backstay.policy.retry import RetryPolicy
from backstay.policy.spend import SpendBudget
from backstay.store.sqlite.tasks import STATE_FILE

TASKS: Final = 60
POLICY: Final = RetryPolicy(
    name="kill-spend", max_attempts=3, initial_delay_s=0.01, max_delay_s=0.01, jitter=0.0
)
SCRIPT: Final = {
    f"t{i}": [Failure(code="ERR_HTTP_503_UNAVAILABLE"), OK] for i in range(0, TASKS, 3)
}
# An attempt's outcome and the status its spend row must have with it.
_SETTLED: Final = {"succeeded": ("settled",), "failed": ("settled",), "running": ("reserved",)}


def main(state_dir: str) -> int:
    state = Path(state_dir)
    specs = [spec(state.parent / "work", f"t{i}", policy=POLICY) for i in range(TASKS)]
    adapter = ScriptedAdapter(SCRIPT, hold_s=0.05)
    with Engine(
        state, adapters={"fake": adapter}, budget=SpendBudget(usd=1000.0), concurrency=4
    ) as engine:
        engine.run_sync(specs)
    return 0


def count(state: Path, query: str) -> int:
    """``query``'s count, read as another process would (0 before the tables exist)."""
    try:
        with contextlib.closing(
            sqlite3.connect(f"file:{state / STATE_FILE}?mode=ro", uri=True)
        ) as c:
            return int(c.execute(query).fetchone()[0])
    except sqlite3.Error:
        return 0


def mismatches(state: Path) -> list[tuple[object, ...]]:
    """Attempts whose spend row is missing or out of step with them, and spend rows of no
    attempt (an interrupted attempt's row may be reserved or charged at its estimate)."""
    with contextlib.closing(sqlite3.connect(state / STATE_FILE)) as conn:
        attempts = conn.execute(
            "SELECT a.attempt_id, a.outcome, s.status FROM backstay_attempts a "
            "LEFT JOIN backstay_spend s ON s.attempt_id = a.attempt_id"
        ).fetchall()
        orphans = conn.execute(
            "SELECT attempt_id, status FROM backstay_spend WHERE attempt_id NOT IN "
            "(SELECT attempt_id FROM backstay_attempts)"
        ).fetchall()
    wrong: list[tuple[object, ...]] = [
        row for row in attempts if row[2] not in _SETTLED.get(str(row[1]), ("reserved", "settled"))
    ]
    return wrong + [("no attempt", *row) for row in orphans]


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
